//! Property-based fuzzing of `DEBIT` on every algorithm, against the same
//! algorithm's `COST` decisions: a debit is admitted; its reply is the state
//! after it as a cost of 0 reads it, with the wait a cost of 1 would be given;
//! where the units fit, it writes what the same `COST` writes; it never lowers
//! what a key holds, and holds at most `MAX_DEBT` units beyond the limit.

use proptest::collection::vec;
use proptest::prelude::*;

use crate::algorithm::fixed::FixedState;
use crate::algorithm::quota::QuotaState;
use crate::algorithm::schedule::{InstantLimiter, Schedule};
use crate::algorithm::sliding::SlidingState;
use crate::algorithm::sliding_log::testing::VecLog;
use crate::algorithm::sliding_log::LogView;
use crate::algorithm::{Decision, Wait, MAX_DEBT};
use crate::fuzz::{clock_steps, cost, limiter};
use crate::grammar::{Charge, Limiter};

/// A limiter's stored state, as the pure algorithms take it.
#[derive(Clone, Debug)]
enum Held {
    Instant(u128),
    Fixed(Option<FixedState>),
    Sliding(Option<SlidingState>),
    Log(VecLog),
    Quota(Option<QuotaState>),
}

impl Held {
    fn empty(l: &Limiter) -> Held {
        match l {
            Limiter::Gcra(_) | Limiter::TokenBucket(_) | Limiter::Leaky(_) => Held::Instant(0),
            Limiter::Fixed(_) => Held::Fixed(None),
            Limiter::Sliding(_) => Held::Sliding(None),
            Limiter::SlidingLog(_) => Held::Log(VecLog::default()),
            Limiter::Quota(_) => Held::Quota(None),
        }
    }
}

/// Decides `n` units counted as `charge` on `held` at `now`: the decision and
/// the state after it (`None`: the log cannot take an entry at the end of time).
fn run(l: &Limiter, held: &Held, now: u64, n: u64, charge: Charge) -> Option<(Decision, Held)> {
    fn instant(
        p: &impl InstantLimiter,
        at: u128,
        now: u64,
        n: u64,
        charge: Charge,
    ) -> (Decision, Held) {
        let now = now.into();
        let out = match charge {
            Charge::Cost => p.decide(at, now, n),
            Charge::Refund => p.refund(at, now, n),
            Charge::Debit => p.debit(at, now, n),
        };
        (out.decision, Held::Instant(out.write.unwrap_or(at)))
    }
    Some(match (l, held) {
        (Limiter::Gcra(p), Held::Instant(at)) => instant(p, *at, now, n, charge),
        (Limiter::TokenBucket(p), Held::Instant(at)) => instant(p, *at, now, n, charge),
        (Limiter::Leaky(p), Held::Instant(at)) => instant(p, *at, now, n, charge),
        (Limiter::Fixed(p), Held::Fixed(s)) => {
            let out = match charge {
                Charge::Cost => p.decide(*s, now, n),
                Charge::Refund => p.refund(*s, now, n),
                Charge::Debit => p.debit(*s, now, n),
            };
            (out.decision, Held::Fixed(out.write.or(*s)))
        }
        (Limiter::Sliding(p), Held::Sliding(s)) => {
            let out = match charge {
                Charge::Cost => p.decide(*s, now, n),
                Charge::Refund => p.refund(*s, now, n),
                Charge::Debit => p.debit(*s, now, n),
            };
            (out.decision, Held::Sliding(out.write.or(*s)))
        }
        (Limiter::Quota(p), Held::Quota(s)) => {
            let out = match charge {
                Charge::Cost => p.decide(*s, now, n),
                Charge::Refund => p.refund(*s, now, n),
                Charge::Debit => p.debit(*s, now, n),
            }
            .expect("a period");
            let written = out.write.map(|w| QuotaState {
                start_ms: w.start_ms,
                end_ms: w.end_ms,
                count: w.count,
                same_calendar: true,
            });
            (out.decision, Held::Quota(written.or(*s)))
        }
        (Limiter::SlidingLog(p), Held::Log(log)) => {
            let mut after = log.clone();
            let decision = match charge {
                Charge::Refund => {
                    let out = p.refund(log, now, n).ok()?;
                    if let Some(r) = out.write {
                        after.apply_refund(&r);
                    }
                    out.decision
                }
                _ => {
                    let out = match charge {
                        Charge::Debit => p.debit(log, now, n),
                        _ => p.decide(log, now, n),
                    }
                    .ok()?;
                    if let Some(w) = out.write {
                        after.apply(&w);
                    }
                    out.decision
                }
            };
            (decision, Held::Log(after))
        }
        _ => unreachable!("a state of another limiter"),
    })
}

/// The units `held` counts at `now` beyond none, scaled so that the cap is
/// comparable: (held, cap) in the same unit.
fn held_and_cap(l: &Limiter, held: &Held, now: u64) -> (u128, u128) {
    let schedule = |s: Schedule, at: u128| {
        let debt = at.saturating_sub(now.into());
        let cap = (s.burst.get() + MAX_DEBT as u128) * s.period_ns.get();
        (debt * s.rate.get(), cap)
    };
    match (l, held) {
        (Limiter::Gcra(p), Held::Instant(at)) => schedule(p.schedule(), *at),
        (Limiter::TokenBucket(p), Held::Instant(at)) => schedule(p.schedule(), *at),
        (Limiter::Leaky(p), Held::Instant(at)) => schedule(p.schedule(), *at),
        (Limiter::Fixed(p), Held::Fixed(s)) => (
            s.filter(|s| current(s.start_ms, p.window_ns.get(), now))
                .map_or(0, |s| s.count)
                .into(),
            (p.limit.get() + MAX_DEBT).into(),
        ),
        (Limiter::Sliding(p), Held::Sliding(s)) => (
            s.filter(|s| current(s.start_ms, p.window_ns.get(), now))
                .map_or(0, |s| s.current)
                .into(),
            (p.limit.get() + MAX_DEBT).into(),
        ),
        (Limiter::Quota(p), Held::Quota(s)) => (
            s.filter(|s| u128::from(now) < u128::from(s.end_ms) * 1_000_000)
                .map_or(0, |s| s.count)
                .into(),
            (p.limit.get() + MAX_DEBT).into(),
        ),
        (Limiter::SlidingLog(p), Held::Log(log)) => {
            let cutoff = crate::algorithm::sliding_log::score_of(now)
                .saturating_sub(p.window_ns.get() / 1_000);
            let mut units = 0u128;
            log.scan_after(cutoff, &mut |e| {
                units += u128::from(e.cost);
                true
            })
            .unwrap();
            (units, (p.limit.get() + MAX_DEBT).into())
        }
        _ => unreachable!("a state of another limiter"),
    }
}

/// Whether a window stored as starting at `start_ms` is the one `now` is in
/// (or a later one, where the clock stepped back).
fn current(start_ms: u64, window_ns: u64, now: u64) -> bool {
    let start_ns = start_ms.saturating_mul(1_000_000);
    let at = now.max(start_ns);
    start_ns >= at - at % window_ns
}

fn check_debit(l: &Limiter, before: &Held, now: u64, n: u64) -> Option<Held> {
    let (debit, after) = run(l, before, now, n, Charge::Debit)?;
    assert!(debit.allowed, "{debit:?}");
    // In the epoch's first microsecond a log entry is scored 0 and never live
    // (for a COST as much): nothing there to compare.
    if matches!(l, Limiter::SlidingLog(_)) && now < 1_000 {
        return Some(after);
    }
    // The reply reads the state after the charge.
    let (zero, _) = run(l, &after, now, 0, Charge::Cost)?;
    assert_eq!(
        (debit.limit, debit.remaining, debit.reset_after_ns),
        (zero.limit, zero.remaining, zero.reset_after_ns),
        "{l:?} {before:?} at {now}: debit {n}"
    );
    // Its wait is a cost of 1's.
    let (one, _) = run(l, &after, now, 1, Charge::Cost)?;
    let wait = match one.allowed {
        true => Wait::After(0),
        false => one.retry_after,
    };
    assert_eq!(
        debit.retry_after, wait,
        "{l:?} {before:?} at {now}: debit {n}"
    );
    // Where the units fit, it writes what the same COST writes.
    let (cost, spent) = run(l, before, now, n, Charge::Cost)?;
    if cost.allowed {
        assert_eq!(
            format!("{spent:?}"),
            format!("{after:?}"),
            "{l:?}: debit {n}"
        );
    }
    // It never lowers what the key holds, and stays within the cap.
    let (was, _) = held_and_cap(l, before, now);
    let (is, cap) = held_and_cap(l, &after, now);
    assert!(is >= was, "{l:?}: debit {n} lowered {was} to {is}");
    assert!(
        is <= was.max(cap),
        "{l:?}: debit {n} holds {is} beyond {cap}"
    );
    Some(after)
}

/// What one step does: a cost, a refund or a debit of `n` units.
fn charge() -> impl Strategy<Value = Charge> {
    prop_oneof![2 => Just(Charge::Cost), 1 => Just(Charge::Refund), 3 => Just(Charge::Debit)]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 40_000, failure_persistence: None, ..ProptestConfig::default() })]

    /// Every algorithm, any parameters, any clock, costs, refunds and debits
    /// interleaved: every debit holds the properties in the module doc.
    #[test]
    fn debits_charge_what_a_cost_would_and_report_a_cost_of_one(
        l in limiter(),
        start in prop_oneof![Just(0u64), Just(u64::MAX), 1_600_000_000_000_000_000u64..2_000_000_000_000_000_000],
        steps in clock_steps(),
        ops in vec((charge(), cost()), 1..8),
    ) {
        let mut now = start;
        let mut held = Held::empty(&l);
        for (step, &(charge, n)) in steps.iter().zip(ops.iter().cycle()) {
            now = (i128::from(now) + step).clamp(0, i128::from(u64::MAX)) as u64;
            let next = match (charge, n) {
                (Charge::Debit, 1..) => check_debit(&l, &held, now, n),
                _ => run(&l, &held, now, n, charge).map(|(_, after)| after),
            };
            // The end of time refuses a log entry: the state stays.
            if let Some(after) = next {
                held = after;
            }
        }
    }
}
