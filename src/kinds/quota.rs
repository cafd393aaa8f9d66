//! `RL.QUOTA key limit DAY|WEEK|MONTH [TZ zone] [ANCHOR yyyy-mm-ddThh:mm]`:
//! its state is the period, its count and the calendar
//! (`quota:<start_ms>:<end_ms>:<count>:<calendar>`).

use std::ffi::CStr;

use crate::algorithm::calendar::{Anchor, Calendar, Unit, Zone};
use crate::algorithm::quota::Quota;
use crate::algorithm::Outcome;
use crate::commands::limiters::{doc, LimiterCommand, WRITE_FAST};
use crate::decision::limiter::{decide_quota, OnKey, Stored, Write};
use crate::docs::{flag, integer, one_of, required, string_option, Doc};
use crate::error::{sanitize, RlError};
use crate::grammar::{Kind, Parameters, Params, Request};
use std::num::NonZeroU64;

impl Parameters for Quota {
    // (Not inlined into the grammar every call parses.)
    #[inline(never)]
    fn from_params(p: &Params<'_>) -> Result<Quota, RlError> {
        let limit = NonZeroU64::new(p.count(0)?).expect("a count is at least 1");
        let unit = Unit::parse(p.positional(1)).ok_or(RlError::BadUnit)?;
        let zone = match p.zone() {
            None => Zone::Utc,
            Some(name) => Zone::parse(name).ok_or_else(|| RlError::UnknownZone(sanitize(name)))?,
        };
        let anchor = match p.anchor() {
            None => Anchor::DEFAULT,
            Some(a) => Anchor::parse(a).ok_or(RlError::BadAnchor)?,
        };
        Ok(Quota {
            limit,
            calendar: Calendar { unit, anchor, zone },
        })
    }
}

impl OnKey for Quota {
    #[inline(always)]
    fn decide_on(&self, key: &Stored, kind: Kind, req: &Request, now: u64) -> Result<Outcome<Write>, RlError> {
        decide_quota(key, kind, self, req, now)
    }
}

impl LimiterCommand for Quota {
    const FLAGS: &'static CStr = WRITE_FAST;
    const STAT: &'static CStr = c"quota";

    fn doc() -> Doc {
        let mut d = doc(
            c"Calendar quota: limit per day, week or month renewing at an anchor's local time",
            vec![
                integer(c"limit"),
                required(one_of(
                    c"unit",
                    vec![flag(c"DAY", c"day"), flag(c"WEEK", c"week"), flag(c"MONTH", c"month")],
                )),
            ],
        );
        d.args.insert(3, string_option(c"TZ", c"zone"));
        d.args.insert(4, string_option(c"ANCHOR", c"anchor"));
        d
    }
}
