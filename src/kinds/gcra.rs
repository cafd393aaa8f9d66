//! `RL.GCRA key limit period [BURST b]`: its state is one instant (the TAT).

use std::ffi::CStr;

use crate::algorithm::gcra::Gcra;
use crate::algorithm::Outcome;
use crate::commands::limiters::{doc, LimiterCommand, WRITE_FAST};
use crate::decision::limiter::{decide_instant, OnKey, Stored, Write};
use crate::docs::{integer, option, string, Doc};
use crate::error::RlError;
use crate::grammar::{Kind, Parameters, Params, Request};

impl Parameters for Gcra {
    fn from_params(p: &Params<'_>) -> Result<Gcra, RlError> {
        let (limit, period_ns) = (p.count(0)?, p.duration_ns(1)?);
        Gcra::new(limit, period_ns, p.burst().unwrap_or(1)).ok_or_else(|| p.rate_too_high())
    }
}

impl OnKey for Gcra {
    // Inlined into each of its few callers: a call decides here once.
    #[inline(always)]
    fn decide_on(&self, key: &Stored, kind: Kind, req: &Request, now: u64) -> Result<Outcome<Write>, RlError> {
        decide_instant(key, kind, self, req, now)
    }
}

impl LimiterCommand for Gcra {
    const FLAGS: &'static CStr = WRITE_FAST;
    const STAT: &'static CStr = c"gcra";

    fn doc() -> Doc {
        let mut d = doc(
            c"GCRA: limit requests per period, evenly spaced, with bursts of up to burst",
            vec![integer(c"limit"), string(c"period")],
        );
        // BURST comes before the shared options, as the grammar lists it.
        d.args.insert(3, option(c"BURST", c"burst"));
        d
    }
}
