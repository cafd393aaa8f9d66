//! A call's limiter: [`Limiter`] has one variant per kind, expanded from the
//! facts' list of kinds (`facts::with_kinds`), each built by its kind's
//! [`Parameters`] (written in `crate::kinds`) from the call's [`Params`].

use super::scalars::{parse_count, parse_duration};
use super::Kind;
use crate::bounds::MAX_COUNT;
use crate::config::Caps;
use crate::error::RlError;
use crate::facts::with_kinds;

/// How a kind's algorithm is built from a call's positional parameters.
pub trait Parameters: Sized {
    /// The algorithm, or the error naming the first bad parameter (read them
    /// in their order).
    fn from_params(p: &Params<'_>) -> Result<Self, RlError>;
}

/// A call's positional parameters (checked in number: one per name), its
/// `BURST` and the operator's caps.
pub struct Params<'a> {
    names: &'static [&'static str],
    positional: &'a [&'a [u8]],
    burst: Option<u64>,
    options: &'a [&'a [u8]],
    calendar: CalendarOptions,
    caps: Caps,
}

/// Where `RL.QUOTA`'s options' values are among a call's options (`TZ
/// zone`, `ANCHOR a`): their places, 0 if not given (a value is never an
/// option's first word). Places, not the words: the grammar carries them
/// through every call's options, so they stay one small value.
#[derive(Clone, Copy, Default)]
pub struct CalendarOptions {
    pub zone: u32,
    pub anchor: u32,
}

impl<'a> Params<'a> {
    pub(super) fn new(
        kind: Kind,
        positional: &'a [&'a [u8]],
        burst: Option<u64>,
        options: &'a [&'a [u8]],
        calendar: CalendarOptions,
        caps: Caps,
    ) -> Self {
        let names = kind.positionals();
        debug_assert_eq!(names.len(), positional.len());
        Params {
            names,
            positional,
            burst,
            options,
            calendar,
            caps,
        }
    }

    /// Positional `i` as given.
    pub fn positional(&self, i: usize) -> &'a [u8] {
        self.positional[i]
    }

    /// `TZ zone`, if given (only RL.QUOTA's grammar reads it).
    pub fn zone(&self) -> Option<&'a [u8]> {
        (self.calendar.zone > 0).then(|| self.options[self.calendar.zone as usize])
    }

    /// `ANCHOR a`, if given (only RL.QUOTA's grammar reads it).
    pub fn anchor(&self) -> Option<&'a [u8]> {
        (self.calendar.anchor > 0).then(|| self.options[self.calendar.anchor as usize])
    }

    /// Positional `i` as a count from 1 to `MAX_COUNT`.
    pub fn count(&self, i: usize) -> Result<u64, RlError> {
        self.count_up_to(i, MAX_COUNT)
    }

    /// Positional `i` as a count from 1 to `max`.
    pub fn count_up_to(&self, i: usize, max: u64) -> Result<u64, RlError> {
        parse_count(self.names[i], self.positional[i], max)
    }

    /// Positional `i` as a duration, in nanoseconds (whole milliseconds).
    pub fn duration_ns(&self, i: usize) -> Result<u64, RlError> {
        parse_duration(self.names[i], self.positional[i])
    }

    /// `BURST b`, if given (only GCRA's grammar reads it).
    pub fn burst(&self) -> Option<u64> {
        self.burst
    }

    pub fn caps(&self) -> Caps {
        self.caps
    }

    /// The refusal of a rate above one unit per nanosecond, named by the last
    /// two positionals (the rate and its period).
    pub fn rate_too_high(&self) -> RlError {
        let n = self.names.len();
        RlError::RateTooHigh {
            rate: self.names[n - 2],
            period: self.names[n - 1],
        }
    }

    /// The refusal of positional `i` as a duration (a window the algorithm cannot take).
    pub fn bad_duration(&self, i: usize) -> RlError {
        RlError::BadDuration(self.names[i])
    }
}

macro_rules! limiter {
    ($($variant:ident($module:ident)),*) => {
        /// A parsed algorithm with valid parameters.
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub enum Limiter {
            $($variant(crate::algorithm::$module::$variant),)*
        }

        impl Limiter {
            /// `kind`'s algorithm from the call's parameters, made by `params`
            /// in the kind's own arm: a kind whose reading is inlined keeps them
            /// in registers (only the quota's, read out of line, are stored).
            pub(super) fn build<'a>(kind: Kind, params: impl Fn() -> Params<'a>) -> Result<Limiter, RlError> {
                Ok(match kind {
                    $(Kind::$variant => Limiter::$variant(Parameters::from_params(&params())?),)*
                })
            }
        }
    };
}

with_kinds!(limiter);
