//! One limiter on one key, in two steps: [`decide`] reads the key's state and
//! runs the pure algorithm, writing nothing; [`commit`] applies the resulting
//! [`Write`] to the key. The decision and its write travel as one
//! [`Outcome<Write>`]. Each kind's [`OnKey`] (in `crate::kinds`) picks the
//! helper for its state's shape: one instant, a window's counts, or a log.

use crate::algorithm::schedule::InstantLimiter;
use crate::algorithm::sliding_log::{Corrupt, Entry, LogRefund, LogView, LogWrite, SlidingLog};
use crate::algorithm::{expire_ms, Outcome};
use crate::codec::{decode, Fields};
use crate::error::RlError;
use crate::facts::with_kinds;
use crate::grammar::{Charge, Kind, Limiter, Request};
use crate::store::{Held, Key};

/// The effect of an admitted request (or a refund) on its key.
pub enum Write {
    /// Store a string state with an absolute expiry.
    Set { state: Fields, expire_ms: u64 },
    /// The limiter is idle again: the key goes, as it would at its expiry.
    Delete,
    /// Add a sliding-log entry (after dropping a bounded number of lapsed ones).
    LogAdd { write: LogWrite, expire_ms: u64 },
    /// Remove the newest sliding-log entries and shrink the next one; the newest
    /// that stays sets the expiry.
    LogRefund { refund: LogRefund, expire_ms: u64 },
}

/// How a kind's state sits on its key: its decision on the key's state,
/// writing nothing (written in `crate::kinds`, with the helpers below).
pub trait OnKey {
    fn decide_on(
        &self,
        key: &Key,
        kind: Kind,
        req: &Request,
        now: u64,
    ) -> Result<Outcome<Write>, RlError>;
}

macro_rules! dispatch {
    ($($variant:ident($module:ident)),*) => {
        /// Decides `req` for the limiter on `key` at `now`, writing nothing.
        /// (Inlined: every call's one decision; two claims call it.)
        #[inline]
        pub fn decide(key: &Key, kind: Kind, req: &Request, now: u64) -> Result<Outcome<Write>, RlError> {
            let pending = match &req.limiter {
                $(Limiter::$variant(p) => p.decide_on(key, kind, req, now)?,)*
            };
            Ok(Outcome {
                decision: pending.decision.within_expiry_cap(now.into()),
                ..pending
            })
        }
    };
}

with_kinds!(dispatch);

/// Decides with a window limiter whose state is `N` stored counts and
/// milliseconds: read as `S`, decided by `run`, and stored as `store` says
/// (`None`: the limiter is idle again, so the key goes).
pub fn decide_window<S, const N: usize>(
    key: &Key,
    kind: Kind,
    state: impl Fn([u64; N]) -> S,
    run: impl Fn(Option<S>) -> Outcome<S>,
    store: impl Fn(&S) -> Option<([u128; N], u128)>,
) -> Result<Outcome<Write>, RlError> {
    let stored = read_string::<N>(key, kind)?.map(|fields| state(fields.map(narrow)));
    Ok(run(stored).map_write(|s| match store(&s) {
        None => Write::Delete,
        Some((fields, idle_at_ns)) => Write::Set {
            state: Fields::new(kind, fields),
            expire_ms: expire_ms(idle_at_ns),
        },
    }))
}

/// Decides with the sliding log on `key`.
pub fn decide_log(
    key: &Key,
    kind: Kind,
    p: &SlidingLog,
    req: &Request,
    now: u64,
) -> Result<Outcome<Write>, RlError> {
    let n = req.cost;
    let log = match key.held() {
        Held::Empty => None,
        Held::Zset => Some(
            key.as_log()
                .ok_or_else(|| RlError::ForeignValue(kind.label()))?,
        ),
        Held::String(_) | Held::ShortString | Held::Other => return Err(RlError::WrongType),
    };
    let view: &dyn LogView = match &log {
        Some(log) => log,
        None => &EmptyLog,
    };
    let corrupt = |_: Corrupt| RlError::ForeignValue(kind.label());
    let add = |w: LogWrite| Write::LogAdd {
        write: w,
        expire_ms: expire_ms(p.idle_at_ns(&w)),
    };
    Ok(match req.charge {
        Charge::Cost => p.decide(view, now, n).map_err(corrupt)?.map_write(add),
        Charge::Debit => p.debit(view, now, n).map_err(corrupt)?.map_write(add),
        Charge::Refund => {
            let out = p.refund(view, now, n).map_err(corrupt)?;
            out.map_write(|r| match r.newest_left_ns {
                None => Write::Delete,
                Some(ns) => Write::LogRefund {
                    refund: r,
                    expire_ms: expire_ms(p.leaves_at_ns(ns)),
                },
            })
        }
    })
}

/// Applies a write to the key it was decided for, replicating its effect.
pub fn commit(key: &Key, write: &Write) {
    match write {
        Write::Set { state, expire_ms } => key.write_string(state.encode().as_bytes(), *expire_ms),
        Write::Delete => key.delete(),
        Write::LogAdd { write, expire_ms } => key.write_log(write, *expire_ms),
        Write::LogRefund { refund, expire_ms } => key.refund_log(refund, *expire_ms),
    }
}

/// Decides with a limiter whose state is one instant (GCRA, token bucket, leaky bucket).
pub fn decide_instant(
    key: &Key,
    kind: Kind,
    limiter: &impl InstantLimiter,
    req: &Request,
    now: u64,
) -> Result<Outcome<Write>, RlError> {
    let (at, now) = (read_instant(key, kind)?, now as u128);
    let out = match req.charge {
        Charge::Cost => limiter.decide(at, now, req.cost),
        Charge::Refund => limiter.refund(at, now, req.cost),
        Charge::Debit => limiter.debit(at, now, req.cost),
    };
    Ok(out.map_write(|t| instant_write(kind, t, now)))
}

/// An instant-state write: the instant is also the expiry; one not after `now`
/// is the idle state, so the key is deleted.
fn instant_write(kind: Kind, t: u128, now: u128) -> Write {
    if t <= now {
        return Write::Delete;
    }
    Write::Set {
        state: Fields::new(kind, [t]),
        expire_ms: expire_ms(t),
    }
}

fn read_instant(key: &Key, kind: Kind) -> Result<u128, RlError> {
    Ok(read_string::<1>(key, kind)?.map_or(0, |[t]| t))
}

/// The fields of a string state `kind` wrote, `None` if the key is empty.
fn read_string<const N: usize>(key: &Key, kind: Kind) -> Result<Option<[u128; N]>, RlError> {
    match key.held() {
        Held::Empty => Ok(None),
        Held::String(bytes) => decode::<N>(kind, bytes).map(Some),
        // Every state `kind` writes is longer: not read, so never re-encoded.
        Held::ShortString => Err(RlError::ForeignValue(kind.label())),
        Held::Zset | Held::Other => Err(RlError::WrongType),
    }
}

/// A stored count or millisecond field; values beyond `u64` saturate (they can
/// only come from a hand-edited key and still decide conservatively).
fn narrow(v: u128) -> u64 {
    v.min(u64::MAX as u128) as u64
}

/// An absent sliding log.
struct EmptyLog;

impl LogView for EmptyLog {
    fn len(&self) -> u64 {
        0
    }
    fn count_after(&self, _: u64) -> Result<u64, Corrupt> {
        Ok(0)
    }
    fn scan_after(&self, _: u64, _: &mut dyn FnMut(Entry) -> bool) -> Result<(), Corrupt> {
        Ok(())
    }
    fn last_through(&self, _: u64) -> Result<Option<Entry>, Corrupt> {
        Ok(None)
    }
    fn scan_newest(&self, _: &mut dyn FnMut(Entry) -> bool) -> Result<(), Corrupt> {
        Ok(())
    }
    fn at_rank(&self, _: u64) -> Result<Option<Entry>, Corrupt> {
        Ok(None)
    }
    fn oldest(&self) -> Result<Option<Entry>, Corrupt> {
        Ok(None)
    }
}
