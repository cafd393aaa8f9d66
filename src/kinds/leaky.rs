//! `RL.LEAKY key capacity leak period`: its state is one instant (when the
//! queue has drained).

use std::ffi::CStr;

use crate::algorithm::leaky::Leaky;
use crate::algorithm::Outcome;
use crate::commands::limiters::{doc, LimiterCommand, WRITE_FAST};
use crate::decision::limiter::{decide_instant, OnKey, Stored, Write};
use crate::docs::{integer, string, Doc};
use crate::error::RlError;
use crate::grammar::{Kind, Parameters, Params, Request};

impl Parameters for Leaky {
    fn from_params(p: &Params<'_>) -> Result<Leaky, RlError> {
        let (capacity, leak, period_ns) = (p.count(0)?, p.count(1)?, p.duration_ns(2)?);
        Leaky::new(capacity, leak, period_ns).ok_or_else(|| p.rate_too_high())
    }
}

impl OnKey for Leaky {
    // Inlined into each of its few callers: a call decides here once.
    #[inline(always)]
    fn decide_on(&self, key: &Stored, kind: Kind, req: &Request, now: u64) -> Result<Outcome<Write>, RlError> {
        decide_instant(key, kind, self, req, now)
    }
}

impl LimiterCommand for Leaky {
    const FLAGS: &'static CStr = WRITE_FAST;
    const STAT: &'static CStr = c"leaky";

    fn doc() -> Doc {
        doc(
            c"Leaky bucket as a queue: admits up to capacity and tells each request when to run",
            vec![integer(c"capacity"), integer(c"leak"), string(c"period")],
        )
    }
}
