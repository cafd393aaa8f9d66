//! `RL.SLIDING key limit window`: its state is the current window's start and
//! the counts of it and the one before (`sliding:<start_ms>:<previous>:<current>`).

use std::ffi::CStr;

use crate::algorithm::sliding::{self, Sliding, SlidingState};
use crate::algorithm::Outcome;
use crate::commands::limiters::{doc, LimiterCommand, WRITE_FAST};
use crate::decision::limiter::{read_window, window_write, OnKey, Stored, Write};
use crate::docs::{integer, string, Doc};
use crate::error::RlError;
use crate::grammar::{Charge, Kind, Parameters, Params, Request};

impl Parameters for Sliding {
    fn from_params(p: &Params<'_>) -> Result<Sliding, RlError> {
        let (limit, window_ns) = (p.count(0)?, p.duration_ns(1)?);
        Sliding::new(limit, window_ns).ok_or_else(|| p.bad_duration(1))
    }
}

impl OnKey for Sliding {
    // Inlined into each of its few callers: a call decides here once.
    #[inline(always)]
    fn decide_on(&self, key: &Stored, kind: Kind, req: &Request, now: u64) -> Result<Outcome<Write>, RlError> {
        let n = req.cost;
        let stored = read_window::<3>(key, kind)?.map(|[start_ms, previous, current]| SlidingState {
            start_ms,
            previous,
            current,
        });
        let out = match req.charge {
            Charge::Cost => self.decide(stored, now, n),
            Charge::Refund => self.refund(stored, now, n),
            Charge::Debit => self.debit(stored, now, n),
        };
        // (A match, not a closure: the write is built in place, inlined.)
        let write = match out.write {
            None => None,
            Some(s) => {
                let idle_at = sliding::idle_at_ns(&s, self.window_ns);
                let fields = [s.start_ms.into(), s.previous.into(), s.current.into()];
                Some(window_write(kind, (s.previous > 0 || s.current > 0).then_some((fields, idle_at))))
            }
        };
        Ok(Outcome {
            decision: out.decision,
            write,
        })
    }
}

impl LimiterCommand for Sliding {
    const FLAGS: &'static CStr = WRITE_FAST;
    const STAT: &'static CStr = c"sliding";

    fn doc() -> Doc {
        doc(
            c"Sliding window counter: limit per window, weighted across two windows",
            vec![integer(c"limit"), string(c"window")],
        )
    }
}
