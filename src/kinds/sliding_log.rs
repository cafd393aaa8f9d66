//! `RL.SLIDINGLOG key limit window`: its state is a sorted set, one entry per
//! admitted request; `limit` is capped by the `sliding-log-max` setting.

use std::ffi::CStr;

use crate::algorithm::sliding_log::SlidingLog;
use crate::algorithm::Outcome;
use crate::commands::limiters::{doc, LimiterCommand};
use crate::decision::limiter::{decide_log, OnKey, Stored, Write};
use crate::docs::{integer, string, Doc};
use crate::error::RlError;
use crate::grammar::{Kind, Parameters, Params, Request};

impl Parameters for SlidingLog {
    fn from_params(p: &Params<'_>) -> Result<SlidingLog, RlError> {
        let limit = p.count_up_to(0, p.caps().sliding_log_max)?;
        SlidingLog::new(limit, p.duration_ns(1)?).ok_or_else(|| p.bad_duration(1))
    }
}

impl OnKey for SlidingLog {
    // Inlined into each of its few callers: a call decides here once.
    #[inline(always)]
    fn decide_on(&self, key: &Stored, kind: Kind, req: &Request, now: u64) -> Result<Outcome<Write>, RlError> {
        decide_log(key, kind, self, req, now)
    }
}

impl LimiterCommand for SlidingLog {
    // Registered without `fast` as the contract has it (a call is O(log n),
    // but a write may also remove up to 64 lapsed entries, and REFUND amortises).
    const FLAGS: &'static CStr = c"write deny-oom";
    const STAT: &'static CStr = c"slidinglog";

    fn doc() -> Doc {
        Doc {
            complexity:
                c"O(log N), N the entries in the log; a write also removes up to 64 lapsed entries",
            ..doc(
                c"Exact sliding log: limit per window, one entry per admitted request",
                vec![integer(c"limit"), string(c"window")],
            )
        }
    }
}
