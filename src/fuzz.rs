//! Property-based fuzzing (proptest) of everything a client's bytes or the clock
//! can reach: the argument parser, the state codec and every algorithm. Together
//! the properties run millions of random inputs; tests build with overflow checks,
//! so an overflow is a panic and fails them.

use proptest::collection::vec;
use proptest::prelude::*;

use crate::algorithm::calendar::{Anchor, Calendar, Unit, Zone};
use crate::algorithm::fixed::FixedState;
use crate::algorithm::quota::{Quota, QuotaState};
use crate::algorithm::schedule::InstantLimiter;
use crate::algorithm::sliding::SlidingState;
use crate::algorithm::sliding_log::testing::VecLog;
use crate::algorithm::sliding_log::{score_of, Entry, SlidingLog};
use crate::algorithm::{expire_ms, Decision, Wait};
use crate::bounds::{MAX_COST, MAX_COUNT, MAX_DURATION_MS};
use crate::codec::{decode, decode_quota, encode, encode_quota};
use crate::config::Caps;
use crate::grammar::{parse, Kind, Limiter};

const PALETTE: [&str; 24] = [
    "",
    "0",
    "1",
    "-1",
    "7",
    "1000000000000",
    "1000000000001",
    "18446744073709551616",
    "nan",
    "inf",
    "1e3",
    "1.5",
    "1s",
    "1500ms",
    "1m",
    "24h",
    "3650d",
    "3651d",
    "COST",
    "cost",
    "PEEK",
    "BURST",
    "burst",
    "\0",
];

fn token() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        3 => proptest::sample::select(&PALETTE[..]).prop_map(|s| s.as_bytes().to_vec()),
        1 => vec(any::<u8>(), 0..24),
        1 => (1u64..=u64::MAX, proptest::sample::select(&["", "ms", "s", "m", "h", "d", "MS", "x"][..]))
            .prop_map(|(n, unit)| format!("{n}{unit}").into_bytes()),
    ]
}

fn kind() -> impl Strategy<Value = Kind> {
    proptest::sample::select(&Kind::ALL[..])
}

/// Counts across the whole range, biased to the edges.
pub(crate) fn count() -> impl Strategy<Value = u64> {
    prop_oneof![1u64..=10, Just(MAX_COUNT), 1u64..=MAX_COUNT]
}

pub(crate) fn cost() -> impl Strategy<Value = u64> {
    prop_oneof![0u64..=5, Just(MAX_COST), 0u64..=MAX_COST]
}

fn duration_ns() -> impl Strategy<Value = u64> {
    prop_oneof![Just(1u64), Just(MAX_DURATION_MS), 1u64..=MAX_DURATION_MS]
        .prop_map(|ms| ms * 1_000_000)
}

/// A clock: mostly moving forward, sometimes jumping back or to the extremes.
pub(crate) fn clock_steps() -> impl Strategy<Value = Vec<i128>> {
    vec(
        prop_oneof![
            8 => 0i128..2_000_000_000,
            1 => -10_000_000_000i128..0,
            1 => Just(i128::from(u64::MAX)),
            1 => Just(-i128::from(u64::MAX)),
        ],
        1..24,
    )
}

fn check(d: &Decision, cost: u64) {
    assert!(d.remaining <= d.limit, "{d:?}");
    match d.retry_after {
        Wait::Never => assert!(!d.allowed && cost > d.limit, "{d:?}"),
        Wait::After(ns) if !d.allowed => assert!(ns > 0 && cost <= d.limit, "{d:?}"),
        Wait::After(_) => assert!(cost <= d.limit, "{d:?}"),
    }
    let r = d.reply();
    assert!(r[3] >= -1 && r[4] >= 0 && r[1] >= 1 && r[2] >= 0);
}

/// Runs one limiter over a clock sequence with random costs, checking every
/// decision and round-tripping every stored state through the codec.
fn drive(limiter: Limiter, start: u64, steps: &[i128], costs: &[u64]) {
    let mut now = start;
    let mut instant = 0u128;
    let (mut fixed, mut sliding, mut log) =
        (None::<FixedState>, None::<SlidingState>, VecLog::default());
    let mut quota = None::<QuotaState>;
    for (step, &cost) in steps.iter().zip(costs.iter().cycle()) {
        now = (i128::from(now) + step).clamp(0, i128::from(u64::MAX)) as u64;
        let wide = u128::from(now);
        let decision = match limiter {
            Limiter::Gcra(p) => {
                let out = p.decide(instant, wide, cost);
                step_instant(Kind::Gcra, &mut instant, out)
            }
            Limiter::TokenBucket(p) => {
                let out = p.decide(instant, wide, cost);
                step_instant(Kind::TokenBucket, &mut instant, out)
            }
            Limiter::Leaky(p) => {
                let out = p.decide(instant, wide, cost);
                step_instant(Kind::Leaky, &mut instant, out)
            }
            Limiter::Fixed(p) => {
                let out = p.decide(fixed, now, cost);
                if let Some(s) = out.write {
                    let text = encode(Kind::Fixed, [s.start_ms.into(), s.count.into()]);
                    assert_eq!(
                        decode::<2>(Kind::Fixed, text.as_bytes()).unwrap(),
                        [s.start_ms.into(), s.count.into()]
                    );
                    expire_ms(crate::algorithm::fixed::idle_at_ns(&s, p.window_ns));
                    fixed = Some(s);
                }
                out.decision
            }
            Limiter::Sliding(p) => {
                let out = p.decide(sliding, now, cost);
                if let Some(s) = out.write {
                    let fields = [s.start_ms.into(), s.previous.into(), s.current.into()];
                    let text = encode(Kind::Sliding, fields);
                    assert_eq!(decode::<3>(Kind::Sliding, text.as_bytes()).unwrap(), fields);
                    expire_ms(crate::algorithm::sliding::idle_at_ns(&s, p.window_ns));
                    sliding = Some(s);
                }
                out.decision
            }
            Limiter::Quota(p) => {
                let out = p.decide(quota, now, cost).expect("a period");
                if let Some(w) = out.write {
                    assert!(
                        w.start_ms <= now / 1_000_000
                            || quota.is_some_and(|q| q.start_ms == w.start_ms)
                    );
                    assert!(now / 1_000_000 < w.end_ms);
                    let fields = [w.start_ms, w.end_ms, w.count];
                    let text = encode_quota(Kind::Quota, fields, &p.calendar);
                    assert_eq!(
                        decode_quota(Kind::Quota, text.as_bytes(), &p.calendar).unwrap(),
                        (fields, true, &b""[..])
                    );
                    assert!(text.as_bytes().ends_with(p.calendar.text().as_bytes()));
                    quota = Some(QuotaState {
                        start_ms: w.start_ms,
                        end_ms: w.end_ms,
                        count: w.count,
                        same_calendar: true,
                    });
                }
                out.decision
            }
            Limiter::SlidingLog(p) => {
                // Only the last nanosecond of u64 cannot take a new entry: refused.
                let Ok(out) = p.decide(&log, now, cost) else {
                    assert_eq!(log.0.last().map(|e| e.ns), Some(u64::MAX));
                    continue;
                };
                assert_eq!(out.decision, naive_log(&p, &log, now, cost));
                if let Some(w) = out.write {
                    let e = w.entry;
                    assert_eq!(
                        Entry::parse(e.member().as_bytes(), e.score() as f64),
                        Some(e)
                    );
                    expire_ms(p.idle_at_ns(&w));
                    log.apply(&w);
                }
                out.decision
            }
        };
        check(&decision, cost);
    }
}

/// The sliding log's decision computed the slow way, visiting every entry:
/// the units of the live entries, and the entry whose leaving frees enough.
fn naive_log(p: &SlidingLog, log: &VecLog, now: u64, cost: u64) -> Decision {
    let cutoff = score_of(now).saturating_sub(p.window_ns.get() / 1_000);
    let live: Vec<&Entry> = log.0.iter().filter(|e| e.score() > cutoff).collect();
    let units: u64 = live.iter().map(|e| e.cost).sum();
    let until = |ns: u64| p.leaves_at_ns(ns).saturating_sub(u128::from(now));
    let newest = live.last().map(|e| e.ns);
    let allowed = cost <= p.limit.get() && units + cost <= p.limit.get();
    let retry_after = if cost > p.limit.get() {
        Wait::Never
    } else if allowed {
        Wait::After(0)
    } else {
        let excess = units + cost - p.limit.get();
        let mut freed = 0;
        let leaving = live.iter().find(|e| {
            freed += e.cost;
            freed >= excess
        });
        Wait::After(until(leaving.expect("enough units").ns))
    };
    let (units, newest) = match (allowed && cost > 0, newest) {
        (true, Some(ns)) => (units + cost, Some(ns.max(now).max(ns + 1))),
        (true, None) => (units + cost, Some(now)),
        (false, _) => (units, newest),
    };
    Decision {
        allowed,
        limit: p.limit.get(),
        remaining: p.limit.get().saturating_sub(units),
        retry_after,
        reset_after_ns: newest.map_or(0, until),
    }
}

fn step_instant(kind: Kind, stored: &mut u128, out: crate::algorithm::Outcome<u128>) -> Decision {
    if let Some(t) = out.write {
        let text = encode(kind, [t]);
        assert_eq!(decode::<1>(kind, text.as_bytes()).unwrap(), [t]);
        expire_ms(t);
        *stored = t;
    }
    out.decision
}

pub(crate) fn limiter() -> impl Strategy<Value = Limiter> {
    use crate::algorithm::token_bucket::TokenBucket;
    use crate::algorithm::{fixed::Fixed, gcra::Gcra, leaky::Leaky, sliding::Sliding};
    // The GCRA family's rates are at most 1 per ns, as the grammar requires: a
    // faster draw gets the shortest whole-millisecond period that allows it.
    let period = |rate: u64, period_ns: u64| period_ns.max(rate.next_multiple_of(1_000_000));
    prop_oneof![
        (count(), duration_ns(), count()).prop_map(move |(limit, period_ns, burst)| {
            Limiter::Gcra(Gcra::new(limit, period(limit, period_ns), burst).unwrap())
        }),
        (count(), count(), duration_ns()).prop_map(move |(capacity, refill, period_ns)| {
            Limiter::TokenBucket(
                TokenBucket::new(capacity, refill, period(refill, period_ns)).unwrap(),
            )
        }),
        (count(), count(), duration_ns()).prop_map(move |(capacity, leak, period_ns)| {
            Limiter::Leaky(Leaky::new(capacity, leak, period(leak, period_ns)).unwrap())
        }),
        (count(), duration_ns()).prop_map(|(limit, window_ns)| Limiter::Sliding(
            Sliding::new(limit, window_ns).unwrap()
        )),
        (count(), duration_ns()).prop_map(|(limit, window_ns)| Limiter::SlidingLog(
            SlidingLog::new(limit, window_ns).unwrap()
        )),
        (count(), duration_ns())
            .prop_map(|(limit, window_ns)| Limiter::Fixed(Fixed::new(limit, window_ns).unwrap())),
        (count(), calendar()).prop_map(|(limit, calendar)| Limiter::Quota(Quota {
            limit: std::num::NonZeroU64::new(limit).unwrap(),
            calendar,
        })),
    ]
}

/// A quota's calendar: any unit and anchor, in zones with gaps, folds,
/// half-hour shifts and a skipped day.
pub(crate) fn calendar() -> impl Strategy<Value = Calendar> {
    const ZONES: [&str; 8] = [
        "UTC",
        "+05:30",
        "-08:00",
        "America/New_York",
        "Europe/Paris",
        "Australia/Lord_Howe",
        "Pacific/Apia",
        "Asia/Kolkata",
    ];
    (
        proptest::sample::select(&["DAY", "WEEK", "MONTH"][..]),
        proptest::sample::select(&ZONES[..]),
        1u16..=9999,
        1u8..=12,
        1u8..=31,
        0u8..24,
        0u8..60,
    )
        .prop_map(|(unit, zone, y, mo, d, h, mi)| {
            let text = format!("{y:04}-{mo:02}-{:02}T{h:02}:{mi:02}", d.min(28));
            Calendar {
                unit: Unit::parse(unit.as_bytes()).unwrap(),
                anchor: Anchor::parse(text.as_bytes()).unwrap(),
                zone: Zone::parse(zone.as_bytes()).unwrap(),
            }
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 1_000_000, failure_persistence: None, ..ProptestConfig::default() })]

    /// The parser never panics, and what it accepts is within the contract's ranges.
    #[test]
    fn parser_accepts_only_valid_requests(kind in kind(), tokens in vec(token(), 0..10)) {
        let args: Vec<&[u8]> = tokens.iter().map(Vec::as_slice).collect();
        if let Ok(req) = parse(kind, &args, Caps::default()) {
            prop_assert!(req.cost <= MAX_COST);
            let ok_count = |v: u64| (1..=MAX_COUNT).contains(&v);
            let ok_duration = |ns: u64| ns % 1_000_000 == 0 && (1..=MAX_DURATION_MS).contains(&(ns / 1_000_000));
            let in_range = match req.limiter {
                Limiter::Gcra(p) => ok_count(p.limit()) && ok_count(p.burst()) && ok_duration(p.period_ns()),
                Limiter::TokenBucket(p) => ok_count(p.capacity()) && ok_count(p.refill()) && ok_duration(p.period_ns()),
                Limiter::Leaky(p) => ok_count(p.capacity()) && ok_count(p.leak()) && ok_duration(p.period_ns()),
                Limiter::Sliding(p) => ok_count(p.limit.get()) && ok_duration(p.window_ns.get()),
                Limiter::SlidingLog(p) => p.limit.get() <= Caps::default().sliding_log_max && ok_duration(p.window_ns.get()),
                Limiter::Fixed(p) => ok_count(p.limit.get()) && ok_duration(p.window_ns.get()),
                Limiter::Quota(p) => ok_count(p.limit.get()),
            };
            prop_assert!(in_range, "out of range: {:?}", req);
        }
    }

    /// Decoding any bytes as any state never panics.
    #[test]
    fn codec_survives_any_bytes(kind in kind(), bytes in vec(any::<u8>(), 0..64), prefix in proptest::sample::select(&["gcra:", "fixed:", "sliding:", "bucket:", "quota:", "quota:1:2:3:", ""][..])) {
        let mut value = prefix.as_bytes().to_vec();
        value.extend(bytes);
        let _ = decode::<1>(kind, &value);
        let _ = decode::<2>(kind, &value);
        let _ = decode::<3>(kind, &value);
        let utc = Calendar { unit: Unit::Day, anchor: Anchor::DEFAULT, zone: Zone::Utc };
        let _ = decode_quota(kind, &value, &utc);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200_000, failure_persistence: None, ..ProptestConfig::default() })]

    /// Every algorithm, any parameters, any clock (including steps back and the
    /// ends of time), any costs: no panic, no overflow, invariants hold.
    #[test]
    fn algorithms_hold_their_invariants(
        limiter in limiter(),
        start in prop_oneof![Just(0u64), Just(u64::MAX), 1_600_000_000_000_000_000u64..2_000_000_000_000_000_000],
        steps in clock_steps(),
        costs in vec(cost(), 1..8),
    ) {
        drive(limiter, start, &steps, &costs);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 20_000, failure_persistence: None, ..ProptestConfig::default() })]

    /// A sliding log that starts with legacy entries (one unit each, as written
    /// before weighted entries existed), under random requests and refunds on a
    /// clock that may step back, decides exactly as the slow count of every
    /// entry, except where the clock has stepped back behind a refund's window:
    /// entries lapsed at the refund then count again, and with them the units
    /// the refund took from the entries after them (a refund takes the oldest
    /// live entries, and a sum runs through every entry), so it decides at
    /// least as strictly, never more loosely. Refunds leave exactly the units
    /// they promise; every admitted request stores one entry; sums keep growing.
    #[test]
    fn sliding_log_matches_a_slow_count(
        limit in 1u64..40,
        window_ms in 1u64..50,
        legacy in vec(0u64..20_000_000, 0..60),
        ops in vec((-3_000_000i64..6_000_000, 0u64..12, any::<bool>()), 1..40),
    ) {
        const T0: u64 = 1_700_000_000_000_000_000;
        let p = SlidingLog::new(limit, window_ms * 1_000_000).unwrap();
        let mut ns: Vec<u64> = legacy.iter().map(|d| T0 + d).collect();
        ns.sort_unstable();
        ns.dedup();
        let mut log = VecLog::legacy(ns);
        let mut now = T0 + 20_000_000;
        // The latest window start of a refund: before it, sums may count more.
        let mut refunded_through = 0;
        for (step, cost, refund) in ops {
            now = now.saturating_add_signed(step);
            let before = log.0.len();
            let cutoff = score_of(now).saturating_sub(window_ms * 1_000);
            let exact = cutoff >= refunded_through;
            if refund {
                refunded_through = refunded_through.max(cutoff);
                let out = p.refund(&log, now, cost).unwrap();
                let units = |l: &VecLog| l.0.iter().filter(|e| e.score() > cutoff).map(|e| e.cost).sum::<u64>();
                let held = units(&log);
                let naive = limit.saturating_sub(held - cost.min(held));
                if exact {
                    prop_assert_eq!(out.decision.remaining, naive);
                } else {
                    prop_assert!(out.decision.remaining <= naive);
                }
                if let Some(r) = out.write {
                    log.apply_refund(&r);
                    prop_assert_eq!(units(&log), held - cost.min(held));
                }
            } else {
                let out = p.decide(&log, now, cost).unwrap();
                let naive = naive_log(&p, &log, now, cost);
                if exact {
                    prop_assert_eq!(out.decision, naive);
                } else {
                    let held = p.decide(&log, now, 0).unwrap().decision.remaining;
                    prop_assert!(held <= naive_log(&p, &log, now, 0).remaining);
                    prop_assert!(!out.decision.allowed || naive.allowed);
                }
                if let Some(w) = out.write {
                    log.apply(&w);
                    prop_assert!(log.0.len() <= before + 1);
                }
            }
            let sums: Vec<u64> = log.0.iter().filter_map(|e| e.sum).collect();
            prop_assert!(sums.windows(2).all(|w| w[0] < w[1]), "{:?}", log);
            prop_assert!(log.0.windows(2).all(|w| w[0].ns < w[1].ns));
        }
    }
}
