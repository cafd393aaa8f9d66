//! `RL.TOKENBUCKET key capacity refill period`: its state is one instant (when
//! the bucket is full again).

use std::ffi::CStr;

use crate::algorithm::token_bucket::TokenBucket;
use crate::algorithm::Outcome;
use crate::commands::limiters::{doc, LimiterCommand, WRITE_FAST};
use crate::decision::limiter::{decide_instant, OnKey, Stored, Write};
use crate::docs::{integer, string, Doc};
use crate::error::RlError;
use crate::grammar::{Kind, Parameters, Params, Request};

impl Parameters for TokenBucket {
    fn from_params(p: &Params<'_>) -> Result<TokenBucket, RlError> {
        let (capacity, refill, period_ns) = (p.count(0)?, p.count(1)?, p.duration_ns(2)?);
        TokenBucket::new(capacity, refill, period_ns).ok_or_else(|| p.rate_too_high())
    }
}

impl OnKey for TokenBucket {
    // Inlined into each of its few callers: a call decides here once.
    #[inline(always)]
    fn decide_on(&self, key: &Stored, kind: Kind, req: &Request, now: u64) -> Result<Outcome<Write>, RlError> {
        decide_instant(key, kind, self, req, now)
    }
}

impl LimiterCommand for TokenBucket {
    const FLAGS: &'static CStr = WRITE_FAST;
    const STAT: &'static CStr = c"tokenbucket";

    fn doc() -> Doc {
        doc(
            c"Token bucket: capacity tokens, refill per period",
            vec![integer(c"capacity"), integer(c"refill"), string(c"period")],
        )
    }
}
