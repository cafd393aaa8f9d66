//! `RL.FIXED key limit window`: its state is the window's start and count
//! (`fixed:<start_ms>:<count>`).

use std::ffi::CStr;

use crate::algorithm::fixed::{self, Fixed, FixedState};
use crate::algorithm::Outcome;
use crate::commands::limiters::{doc, LimiterCommand, WRITE_FAST};
use crate::decision::limiter::{read_window, window_write, OnKey, Stored, Write};
use crate::docs::{integer, string, Doc};
use crate::error::RlError;
use crate::grammar::{Charge, Kind, Parameters, Params, Request};

impl Parameters for Fixed {
    fn from_params(p: &Params<'_>) -> Result<Fixed, RlError> {
        let (limit, window_ns) = (p.count(0)?, p.duration_ns(1)?);
        Fixed::new(limit, window_ns).ok_or_else(|| p.bad_duration(1))
    }
}

impl OnKey for Fixed {
    // Inlined into each of its few callers: a call decides here once.
    #[inline(always)]
    fn decide_on(&self, key: &Stored, kind: Kind, req: &Request, now: u64) -> Result<Outcome<Write>, RlError> {
        let n = req.cost;
        let stored = read_window::<2>(key, kind)?.map(|[start_ms, count]| FixedState { start_ms, count });
        let out = match req.charge {
            Charge::Cost => self.decide(stored, now, n),
            Charge::Refund => self.refund(stored, now, n),
            Charge::Debit => self.debit(stored, now, n),
        };
        // (A match, not a closure: the write is built in place, inlined.)
        let write = match out.write {
            None => None,
            Some(s) => {
                let idle_at = fixed::idle_at_ns(&s, self.window_ns);
                Some(window_write(kind, (s.count > 0).then(|| ([s.start_ms.into(), s.count.into()], idle_at))))
            }
        };
        Ok(Outcome {
            decision: out.decision,
            write,
        })
    }
}

impl LimiterCommand for Fixed {
    const FLAGS: &'static CStr = WRITE_FAST;
    const STAT: &'static CStr = c"fixed";

    fn doc() -> Doc {
        doc(
            c"Fixed window counter: limit per window aligned to the epoch",
            vec![integer(c"limit"), string(c"window")],
        )
    }
}
