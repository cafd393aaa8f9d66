//! One limiter on one key, in two steps: [`decide`] reads the key's state and
//! its penalty, runs the pure algorithm and the penalty's rules, writing
//! nothing; [`commit`] applies the resulting [`KeyWrite`] to the key. The
//! decision and its write travel as one [`Outcome<KeyWrite>`]. Each kind's
//! [`OnKey`] (in `crate::kinds`) picks the helper for its state's shape: one
//! instant, a window's counts, or a log.

use crate::algorithm::calendar::Calendar;
use crate::algorithm::penalty::Penalty;
use crate::algorithm::quota::{Quota, QuotaState};
use crate::algorithm::schedule::InstantLimiter;
use crate::algorithm::sliding_log::{Corrupt, Entry, LogRefund, LogView, LogWrite, SlidingLog};
use crate::algorithm::{expire_ms, Outcome, Wait};
use std::cell::Cell;

use crate::codec::{
    after_state, decode_head, decode_quota, encode_quota, penalty_only, split_penalty,
    with_penalty, Fields, Text,
};
use crate::error::RlError;
use crate::facts::{with_kinds, PENALTY_TAG};
use crate::grammar::{Charge, Kind, Limiter, Request};
use crate::store::{Held, Key, LogHead};

/// A limiter's key as read for one decision: the key, what it holds (a
/// string state, with the penalty that may follow it; a key holding only a
/// penalty is `Empty`), and a sliding log's lowest members (its penalty
/// member, its oldest entry).
pub struct Stored<'k> {
    pub key: &'k Key,
    held: Held<'k>,
    log_head: Option<LogHead>,
    /// What follows a string state's fields, once decoded: nothing, or its
    /// penalty (see `codec::after_state`).
    tail: Cell<&'k [u8]>,
}

/// What committing a decision does to its key. `Own`: the limiter's own
/// write on a key that holds no penalty (every call without `PENALTY` on
/// such a key: as small as the write itself, so the common decision moves
/// as cheaply as before penalties). `Penalty`: a write that involves one
/// (boxed: it is the rare one).
pub enum KeyWrite {
    Own(Write),
    Penalty(Box<PenaltyWrite>),
}

/// A write around the key's penalty: the limiter's own write (if any) and
/// the penalty before and after. `own: None` with a new penalty after is a
/// penalty starting (the state stays as it is).
pub struct PenaltyWrite {
    own: Option<Write>,
    before: Option<Penalty>,
    after: Option<Penalty>,
}

impl KeyWrite {
    /// True if committing it starts a penalty.
    pub fn starts_penalty(&self) -> bool {
        matches!(self, KeyWrite::Penalty(p) if p.own.is_none() && p.after.is_some())
    }

    /// The limiter's own write `own` on a key whose penalty was `before` and
    /// is `after` (both `None`: the plain write).
    fn around(own: Option<Write>, before: Option<Penalty>, after: Option<Penalty>) -> KeyWrite {
        match (own, before, after) {
            (Some(own), None, None) => KeyWrite::Own(own),
            (own, before, after) => {
                KeyWrite::Penalty(Box::new(PenaltyWrite { own, before, after }))
            }
        }
    }
}

/// The effect of an admitted request (or a refund) on its key.
pub enum Write {
    /// Store a string state with an absolute expiry.
    Set { state: Fields, expire_ms: u64 },
    /// Store a quota's state (its fields, then its calendar) with an absolute expiry.
    SetQuota {
        fields: [u64; 3],
        calendar: Calendar,
        expire_ms: u64,
    },
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
        key: &Stored,
        kind: Kind,
        req: &Request,
        now: u64,
    ) -> Result<Outcome<Write>, RlError>;
}

macro_rules! dispatch {
    ($($variant:ident($module:ident)),*) => {
        /// Decides `req` for the limiter on `key` at `now`, writing nothing: the
        /// limiter's decision, as the key's penalty (if any) answers it (see
        /// [`decide_as`], compiled once per kind).
        pub fn decide(key: &Key, kind: Kind, req: &Request, now: u64) -> Result<Outcome<KeyWrite>, RlError> {
            match &req.limiter {
                $(Limiter::$variant(p) => decide_as(key, kind, p, req, now),)*
            }
        }
    };
}

with_kinds!(dispatch);

/// [`decide`] with `limiter`, the request's own. A key without a penalty,
/// decided without `PENALTY`, takes the limiter's own outcome as it is (the
/// common call: it costs what it did before penalties).
///
/// One copy per kind, with only that kind's decision inlined in it: no kind
/// pays for the others' code around its own. Deciding again is a call of
/// [`decide`]: on the now-absent key if the key vanished while its handle was
/// closed around a server call (a legacy sliding-log census; once, as an
/// absent key calls no server), and for the cost of 1 that a `COST 0` during
/// a penalty reports.
#[inline(never)]
fn decide_as(
    key: &Key,
    kind: Kind,
    limiter: &impl OnKey,
    req: &Request,
    now: u64,
) -> Result<Outcome<KeyWrite>, RlError> {
    let (stored, alone) = open(key, kind)?;
    let own = limiter.decide_on(&stored, kind, req, now)?;
    if key.take_vanished() {
        return decide(key, kind, req, now);
    }
    let before = match alone {
        Some(p) => Some(p),
        None => after_state(stored.tail.get()).map_err(|()| RlError::ForeignValue(kind.label()))?,
    };
    let out = match before {
        None if req.penalty.is_none() => own.map_write(KeyWrite::Own),
        _ => judge(key, kind, req, now, before, own)?,
    };
    let mut out = out;
    out.decision.cap_expiry(now.into());
    Ok(out)
}

/// True if the key holds a penalty in force at `now` (a `BLOCK` call then
/// waits only if the penalty ends within its time).
pub fn penalized(key: &Key, kind: Kind, now: u64) -> Result<bool, RlError> {
    Ok(read(key, kind)?.1.is_some_and(|p| p.active(now)))
}

/// The key as a decision reads it, and its penalty if the key holds one
/// apart from a state: a string holding only a penalty, or a sliding log's
/// penalty member. The penalty after a string state is found by decoding the
/// state (`Stored::tail`): every call reads its key through here, and the
/// state's own digits end where a penalty would begin.
#[inline(always)]
fn open(key: &Key, kind: Kind) -> Result<(Stored<'_>, Option<Penalty>), RlError> {
    let foreign = || RlError::ForeignValue(kind.label());
    let (held, alone, log_head) = match key.held() {
        Held::String(bytes) if bytes.first() == PENALTY_TAG.as_bytes().first() => {
            match penalty_only(bytes) {
                Some(p) => (Held::Empty, Some(p), None),
                None => (Held::String(bytes), None, None),
            }
        }
        Held::Zset if kind == Kind::SlidingLog => {
            let head = key.log_head().map_err(|()| foreign())?;
            (Held::Zset, head.penalty, Some(head))
        }
        held => (held, None, None),
    };
    let stored = Stored {
        key,
        held,
        log_head,
        tail: Cell::new(&[]),
    };
    Ok((stored, alone))
}

/// The key's state and penalty. A string's penalty follows its state; a
/// sliding log's is a member scored below every entry.
#[inline(always)]
fn read(key: &Key, kind: Kind) -> Result<(Stored<'_>, Option<Penalty>), RlError> {
    let foreign = || RlError::ForeignValue(kind.label());
    let (held, before, log_head) = match key.held() {
        Held::String(bytes) => {
            let split = split_penalty(bytes).map_err(|()| foreign())?;
            let held = split.state.map_or(Held::Empty, Held::String);
            (held, split.penalty, None)
        }
        Held::Zset if kind == Kind::SlidingLog => {
            let head = key.log_head().map_err(|()| foreign())?;
            (Held::Zset, head.penalty, Some(head))
        }
        held => (held, None, None),
    };
    let stored = Stored {
        key,
        held,
        log_head,
        tail: Cell::new(&[]),
    };
    Ok((stored, before))
}

/// The penalty's rules (see `algorithm::penalty`) over the limiter's own
/// decision `own`: a penalty in force denies every spending call and writes
/// nothing (`COST 0` reports the wait a cost of 1 would get); a refund or a
/// debit keeps it; a denial that may start one does.
#[inline(never)]
fn judge(
    key: &Key,
    kind: Kind,
    req: &Request,
    now: u64,
    before: Option<Penalty>,
    own: Outcome<Write>,
) -> Result<Outcome<KeyWrite>, RlError> {
    let kept = before.filter(|p| p.kept(now));
    let carry = |w: Write| KeyWrite::around(Some(w), before, kept);
    if let Some(p) = before.filter(|p| p.active(now)) {
        return Ok(match (req.charge, req.cost) {
            (Charge::Cost, 0) => {
                // A cost of 1, as the penalty answers it: its wait is the later
                // of the penalty's end and the limiter's own.
                let one = decide(key, kind, &Request { cost: 1, ..*req }, now)?;
                Outcome {
                    decision: p.peek_zero(&own.decision, &one.decision, now),
                    write: None,
                }
            }
            (Charge::Cost, _) => Outcome {
                decision: p.deny(&own.decision, now),
                write: None,
            },
            (Charge::Refund | Charge::Debit, _) => Outcome {
                decision: p.under(&own.decision, now),
                write: own.write.map(carry),
            },
        });
    }
    Ok(match req.penalty.filter(|_| starts_penalty(req, &own)) {
        Some(rule) => {
            let p = rule.start(before, now);
            Outcome {
                decision: p.deny(&own.decision, now),
                write: Some(KeyWrite::around(None, before, Some(p))),
            }
        }
        None => own.map_write(carry),
    })
}

/// True if the limiter's denial of `req` starts a penalty: a spending call
/// (not peeked) that the limiter could admit later, and that would not wait
/// for it (`BLOCK` long enough).
fn starts_penalty(req: &Request, own: &Outcome<Write>) -> bool {
    let d = &own.decision;
    let would_wait = |wait: u128| req.block.is_some_and(|b| wait <= b.as_nanos().0 as u128);
    req.charge == Charge::Cost
        && req.cost >= 1
        && !req.peek
        && !d.allowed
        && match d.retry_after {
            Wait::Never => false,
            Wait::After(wait) => !would_wait(wait),
        }
}

/// A window limiter's stored state: its `N` counts and milliseconds (`None`
/// if the key is empty). The kind decides on it in its own code, and stores
/// what it decided with [`window_write`].
#[inline(always)]
pub fn read_window<const N: usize>(key: &Stored, kind: Kind) -> Result<Option<[u64; N]>, RlError> {
    Ok(read_string::<N>(key, kind)?.map(|fields| fields.map(narrow)))
}

/// A window limiter's write: its `N` fields and the instant it is idle
/// again, or `None` if it is idle now (the key goes).
#[inline(always)]
pub fn window_write<const N: usize>(kind: Kind, state: Option<([u128; N], u128)>) -> Write {
    match state {
        None => Write::Delete,
        Some((fields, idle_at_ns)) => Write::Set {
            state: Fields::new(kind, fields),
            expire_ms: expire_ms(idle_at_ns),
        },
    }
}

/// Decides with a calendar quota: its state is a period, a count and the
/// calendar's text (compared with the call's, never parsed: another text is
/// another calendar). The key goes when a refund leaves it idle.
// (Not inlined: the calendar's code would weigh on every other kind's call.)
#[inline(never)]
pub fn decide_quota(
    key: &Stored,
    kind: Kind,
    quota: &Quota,
    req: &Request,
    now: u64,
) -> Result<Outcome<Write>, RlError> {
    let stored = match key.held {
        Held::Empty => None,
        Held::String(bytes) => {
            let ([start_ms, end_ms, count], same_calendar, tail) =
                decode_quota(kind, bytes, &quota.calendar)?;
            key.tail.set(tail);
            Some(QuotaState {
                start_ms,
                end_ms,
                count,
                same_calendar,
            })
        }
        Held::ShortString => return Err(RlError::ForeignValue(kind.label())),
        Held::Zset | Held::Other => return Err(RlError::WrongType),
    };
    let n = req.cost;
    let out = match req.charge {
        Charge::Cost => quota.decide(stored, now, n),
        Charge::Refund => quota.refund(stored, now, n),
        Charge::Debit => quota.debit(stored, now, n),
    }
    .ok_or(RlError::Internal(kind.label()))?;
    Ok(out.map_write(|w| match w.count {
        0 => Write::Delete,
        count => Write::SetQuota {
            fields: [w.start_ms, w.end_ms, count],
            calendar: quota.calendar,
            expire_ms: w.end_ms.min(crate::algorithm::MAX_EXPIRE_MS),
        },
    }))
}

/// Decides with the sliding log on `key`.
#[inline(always)]
pub fn decide_log(
    key: &Stored,
    kind: Kind,
    p: &SlidingLog,
    req: &Request,
    now: u64,
) -> Result<Outcome<Write>, RlError> {
    let n = req.cost;
    let log = match key.held {
        Held::Empty => None,
        // The set's lowest members were read with its penalty (`read`).
        Held::Zset => Some(
            match key.log_head {
                Some(head) => key.key.log_from(head.penalty.is_some(), head.oldest),
                None => key.key.as_log(false),
            }
            .ok_or_else(|| RlError::ForeignValue(kind.label()))?,
        ),
        // A string's text is not a log's, unless it is a `|` and no penalty
        // after it (what every string limiter reads first).
        Held::String(bytes) if split_penalty(bytes).is_err() => {
            return Err(RlError::ForeignValue(kind.label()))
        }
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

/// Applies a write to the key it was decided for, replicating its effect. A
/// penalty kept by the write stays on the key (and keeps it until its `keep`
/// at least); one that lapsed goes with it.
pub fn commit(key: &Key, write: &KeyWrite) {
    match write {
        KeyWrite::Own(own) => commit_own(key, own),
        KeyWrite::Penalty(w) => match &w.own {
            None => {
                if let Some(p) = w.after {
                    key.penalize(w.before, &p);
                }
            }
            Some(own) => commit_around(key, own, w.before, w.after),
        },
    }
}

/// The limiter's own write on a key that holds no penalty, nor will.
fn commit_own(key: &Key, own: &Write) {
    match own {
        Write::Set { state, expire_ms } => key.write_string(state.encode().as_bytes(), *expire_ms),
        Write::SetQuota {
            fields,
            calendar,
            expire_ms,
        } => key.write_string(quota_text(fields, calendar).as_bytes(), *expire_ms),
        Write::Delete => key.delete(),
        Write::LogAdd { write, expire_ms } => key.write_log(write, *expire_ms),
        Write::LogRefund { refund, expire_ms } => key.refund_log(refund, *expire_ms),
    }
}

/// A quota's stored text (`decide_quota` writes only `Kind::Quota`'s).
fn quota_text(fields: &[u64; 3], calendar: &Calendar) -> Text {
    encode_quota(Kind::Quota, *fields, calendar)
}

/// The limiter's own write on a key whose penalty was `before` and is `after`.
fn commit_around(key: &Key, own: &Write, before: Option<Penalty>, after: Option<Penalty>) {
    let keep = |expire_ms: u64| after.map_or(expire_ms, |p| expire_ms.max(p.keep_ms));
    match (own, after) {
        (Write::Set { state, expire_ms }, None) => {
            key.write_string(state.encode().as_bytes(), *expire_ms)
        }
        (Write::Set { state, expire_ms }, Some(p)) => {
            let text = with_penalty(Some(state.encode().as_bytes()), &p);
            key.write_string(text.as_bytes(), keep(*expire_ms));
        }
        (
            Write::SetQuota {
                fields,
                calendar,
                expire_ms,
            },
            None,
        ) => key.write_string(quota_text(fields, calendar).as_bytes(), *expire_ms),
        (
            Write::SetQuota {
                fields,
                calendar,
                expire_ms,
            },
            Some(p),
        ) => {
            let text = with_penalty(Some(quota_text(fields, calendar).as_bytes()), &p);
            key.write_string(text.as_bytes(), keep(*expire_ms));
        }
        (Write::Delete, None) => key.delete(),
        (Write::Delete, Some(p)) => {
            key.replace_string(with_penalty(None, &p).as_bytes(), p.keep_ms)
        }
        (Write::LogAdd { write, expire_ms }, _) => {
            key.carry_log_penalty(before, after);
            key.write_log(write, keep(*expire_ms));
        }
        (Write::LogRefund { refund, expire_ms }, _) => {
            key.carry_log_penalty(before, after);
            key.refund_log(refund, keep(*expire_ms));
        }
    }
}

/// Decides with a limiter whose state is one instant (GCRA, token bucket, leaky bucket).
#[inline(always)]
pub fn decide_instant(
    key: &Stored,
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

#[inline(always)]
fn read_instant(key: &Stored, kind: Kind) -> Result<u128, RlError> {
    Ok(read_string::<1>(key, kind)?.map_or(0, |[t]| t))
}

/// The fields of a string state `kind` wrote, `None` if the key is empty.
#[inline(always)]
fn read_string<const N: usize>(key: &Stored, kind: Kind) -> Result<Option<[u128; N]>, RlError> {
    match key.held {
        Held::Empty => Ok(None),
        Held::String(bytes) => {
            let (fields, tail) = decode_head::<N>(kind, bytes)?;
            key.tail.set(tail);
            Ok(Some(fields))
        }
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
