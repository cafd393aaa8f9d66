//! The decision commands' algorithms: names, positional parameters, the
//! options each form of their grammar takes.

use std::ffi::CStr;

/// The decision commands, one per algorithm.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Gcra,
    TokenBucket,
    Leaky,
    Sliding,
    SlidingLog,
    Fixed,
}

impl Kind {
    pub const ALL: [Kind; 6] = [
        Kind::Gcra,
        Kind::TokenBucket,
        Kind::Leaky,
        Kind::Sliding,
        Kind::SlidingLog,
        Kind::Fixed,
    ];

    /// The command's name as registered (and as Redis reports it).
    pub const fn name(self) -> &'static CStr {
        match self {
            Kind::Gcra => c"rl.gcra",
            Kind::TokenBucket => c"rl.tokenbucket",
            Kind::Leaky => c"rl.leaky",
            Kind::Sliding => c"rl.sliding",
            Kind::SlidingLog => c"rl.slidinglog",
            Kind::Fixed => c"rl.fixed",
        }
    }

    /// The command's name as Redis reports it (in arity errors).
    pub fn command(self) -> &'static str {
        self.name().to_str().expect("ASCII")
    }

    /// The command's name as users write it (in error messages).
    pub const fn label(self) -> &'static str {
        match self {
            Kind::Gcra => "RL.GCRA",
            Kind::TokenBucket => "RL.TOKENBUCKET",
            Kind::Leaky => "RL.LEAKY",
            Kind::Sliding => "RL.SLIDING",
            Kind::SlidingLog => "RL.SLIDINGLOG",
            Kind::Fixed => "RL.FIXED",
        }
    }

    /// The algorithm's name in an `RL.ALL` clause (`GCRA`, `TOKENBUCKET`, ...).
    pub fn tag_upper(self) -> &'static str {
        &self.label()[3..]
    }

    /// Names of the positional parameters after the key.
    pub fn positionals(self) -> &'static [&'static str] {
        match self {
            Kind::Gcra => &["limit", "period"],
            Kind::TokenBucket => &["capacity", "refill", "period"],
            Kind::Leaky => &["capacity", "leak", "period"],
            Kind::Sliding | Kind::SlidingLog | Kind::Fixed => &["limit", "window"],
        }
    }

    /// The number of arguments including the command name and the key.
    pub fn min_argc(self) -> usize {
        2 + self.positionals().len()
    }
}
