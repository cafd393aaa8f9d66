use super::testing::VecLog;
use super::*;

const MS: u64 = 1_000_000;
const T0: u64 = 1_700_000_000_000 * MS;

fn run(l: &SlidingLog, log: &mut VecLog, now: u64, cost: u64) -> [i64; 5] {
    let out = l.decide(log, now, cost).unwrap();
    if let Some(w) = out.write {
        log.apply(&w);
    }
    out.decision.reply()
}

fn refund(l: &SlidingLog, log: &mut VecLog, now: u64, units: u64) -> [i64; 5] {
    let out = l.refund(log, now, units).unwrap();
    if let Some(r) = out.write {
        log.apply_refund(&r);
    }
    out.decision.reply()
}

fn per_second(limit: u64) -> SlidingLog {
    SlidingLog::new(limit, 1_000 * MS).unwrap()
}

#[test]
fn exact_window_and_retry() {
    let l = per_second(3);
    let mut log = VecLog::default();
    assert_eq!(run(&l, &mut log, T0, 1), [1, 3, 2, 0, 1_000]);
    assert_eq!(run(&l, &mut log, T0 + 300 * MS, 2), [1, 3, 0, 0, 1_000]);
    assert_eq!(
        log.0,
        vec![
            Entry::weighted(T0, 1, 1),
            Entry::weighted(T0 + 300 * MS, 2, 3)
        ]
    );
    // Cost 2 must wait for the two oldest units: the second leaves at 1300 ms.
    assert_eq!(run(&l, &mut log, T0 + 500 * MS, 2), [0, 3, 0, 800, 800]);
    // The first entry leaves exactly at T0 + 1 s.
    assert_eq!(run(&l, &mut log, T0 + 1_000 * MS - 1_000, 1)[0], 0);
    assert_eq!(run(&l, &mut log, T0 + 1_000 * MS, 1), [1, 3, 0, 0, 1_000]);
    assert_eq!(log.0.len(), 2, "the lapsed entry was trimmed");
    assert_eq!(log.0[1], Entry::weighted(T0 + 1_000 * MS, 1, 4));
}

#[test]
fn one_entry_per_request_whatever_its_cost() {
    let l = per_second(100_000_000);
    let mut log = VecLog::default();
    assert_eq!(run(&l, &mut log, T0, 100_000_000)[..3], [1, 100_000_000, 0]);
    assert_eq!(log.0, vec![Entry::weighted(T0, 100_000_000, 100_000_000)]);
    assert_eq!(
        run(&l, &mut log, T0 + 1, 1),
        [0, 100_000_000, 0, 1_000, 1_000]
    );
}

#[test]
fn cost_above_limit_is_denied_before_anything_is_added() {
    let l = SlidingLog::new(5, 1_000 * MS).unwrap();
    let mut log = VecLog::default();
    assert_eq!(run(&l, &mut log, T0, 6), [0, 5, 5, -1, 0]);
    assert!(log.0.is_empty());
    assert_eq!(run(&l, &mut log, T0, 0), [1, 5, 5, 0, 0]);
    assert!(log.0.is_empty());
}

#[test]
fn retry_finds_the_entry_that_frees_enough_units_among_many() {
    // 1,000 requests of cost 3, 1 ms apart: the retry of a request needing
    // the k-th oldest unit is when the entry holding it leaves.
    let l = per_second(3_000);
    let mut log = VecLog::default();
    for i in 0..1_000 {
        assert_eq!(run(&l, &mut log, T0 + i * MS, 3)[0], 1);
    }
    let now = T0 + 999 * MS;
    for (cost, entry) in [(1, 0), (3, 0), (4, 1), (13, 4), (2_998, 999), (3_000, 999)] {
        let r = l.decide(&log, now, cost).unwrap().decision.reply();
        assert_eq!(r[..4], [0, 3_000, 0, 1_000 - 999 + entry], "cost {cost}");
    }
    // The same with a legacy log holding the same units, three per microsecond.
    let mut legacy = VecLog::legacy((0..1_000).flat_map(|i| {
        let at = T0 + i * MS;
        [at, at + 1, at + 2]
    }));
    for cost in [1, 3, 4, 13, 2_000, 2_998, 3_000] {
        assert_eq!(
            l.decide(&log, now, cost).unwrap().decision,
            l.decide(&legacy, now, cost).unwrap().decision,
            "cost {cost}"
        );
    }
    // Legacy logs accept weighted entries after their own.
    let later = T0 + 1_500 * MS;
    assert_eq!(run(&l, &mut legacy, later, 5)[..3], [1, 3_000, 1_498]);
    assert_eq!(legacy.0.last(), Some(&Entry::weighted(later, 5, 5)));
}

/// A log with legacy entries, then weighted ones, decides exactly as an
/// all-legacy log holding the same units at the same microseconds.
#[test]
fn mixed_logs_decide_as_legacy_logs_holding_the_same_units() {
    let l = per_second(40);
    // Legacy: 10 units at 0..9 ms (one per ms). Weighted: costs 1..=5 at 20, 40, .. ms.
    let mut mixed = VecLog::legacy((0..10).map(|i| T0 + i * MS));
    let mut all_legacy = mixed.clone();
    let mut sum = 0;
    for (i, cost) in (1..=5u64).enumerate() {
        let ns = T0 + (20 + 20 * i as u64) * MS;
        sum += cost;
        mixed.0.push(Entry::weighted(ns, cost, sum));
        all_legacy
            .0
            .extend((0..cost).map(|j| Entry::legacy(ns + j)));
    }
    // 25 units. Every instant from before the first leaves until after the last.
    for at_ms in [
        0, 500, 999, 1_000, 1_003, 1_009, 1_010, 1_020, 1_030, 1_040, 1_059, 1_060, 1_080, 1_099,
        1_100, 1_150,
    ] {
        for cost in [0, 1, 5, 15, 16, 20, 30, 40, 41] {
            let now = T0 + at_ms * MS + 17;
            assert_eq!(
                l.decide(&mixed, now, cost).unwrap().decision,
                l.decide(&all_legacy, now, cost).unwrap().decision,
                "at {at_ms} ms, cost {cost}"
            );
        }
        for units in [1, 3, 12, 25, 30] {
            let now = T0 + at_ms * MS;
            assert_eq!(
                l.refund(&mixed, now, units).unwrap().decision,
                l.refund(&all_legacy, now, units).unwrap().decision,
                "refund {units} at {at_ms} ms"
            );
        }
    }
}

#[test]
fn refunds_remove_the_oldest_entries_whole_then_shrink_the_next() {
    let l = SlidingLog::new(10, 1_000 * MS).unwrap();
    let mut log = VecLog::default();
    run(&l, &mut log, T0, 2);
    run(&l, &mut log, T0 + 400 * MS, 3);
    run(&l, &mut log, T0 + 450 * MS, 1);
    // 6 units; giving 3 back removes the oldest (2) and takes 1 from the next
    // (3), whose sum stays: the newest entry stays, and so does the expiry.
    let now = T0 + 500 * MS;
    let cutoff_us = score_of(now) - 1_000_000;
    let out = l.refund(&log, now, 3).unwrap();
    assert_eq!(
        out.write,
        Some(LogRefund {
            cutoff_us,
            remove: 1,
            rewrite: Some((
                Entry::weighted(T0 + 400 * MS, 3, 5),
                Entry::weighted(T0 + 400 * MS, 2, 5)
            )),
            newest_left_ns: Some(T0 + 450 * MS)
        })
    );
    assert_eq!(out.decision.reply(), [1, 10, 7, 0, 950]);
    log.apply_refund(&out.write.unwrap());
    // The log still decides right: 3 units, sums running on.
    assert_eq!(run(&l, &mut log, T0 + 600 * MS, 7)[..3], [1, 10, 0]);
    assert_eq!(log.0.last(), Some(&Entry::weighted(T0 + 600 * MS, 7, 13)));
    // An exact whole-entry refund rewrites nothing.
    let out = l.refund(&log, T0 + 600 * MS, 2).unwrap();
    assert_eq!(
        out.write,
        Some(LogRefund {
            cutoff_us: score_of(T0 + 600 * MS) - 1_000_000,
            remove: 1,
            rewrite: None,
            newest_left_ns: Some(T0 + 600 * MS)
        })
    );
    // Giving back more than is held empties the log.
    let all = l.refund(&log, T0 + 600 * MS, 99).unwrap();
    assert_eq!(all.write.and_then(|r| r.newest_left_ns), None);
    assert_eq!(all.decision.reply(), [1, 10, 10, 0, 0]);
    assert_eq!(l.refund(&VecLog::default(), T0, 1).unwrap().write, None);
    // Refunds reach into legacy entries (the oldest) one unit at a time, then
    // into the weighted ones.
    let mut legacy = VecLog::legacy([T0, T0 + 1, T0 + 2]);
    run(&l, &mut legacy, T0 + 100 * MS, 4);
    assert_eq!(
        refund(&l, &mut legacy, T0 + 200 * MS, 5),
        [1, 10, 8, 0, 900]
    );
    assert_eq!(legacy.0, [Entry::weighted(T0 + 100 * MS, 2, 4)]);
}

/// Reservations settled out of order (the LLM proxy's case): A reserves 50,
/// B reserves 50 two seconds later, A gives all 50 back, B uses its 50. A
/// refund does not say whose entry it was, so it takes the oldest: B's units
/// stay counted until B's own time leaves the window, and C's 100 waits for
/// them. (Giving back the newest entry let C in while B's 50 still counted:
/// 150 in one window of 100.)
#[test]
fn a_refund_never_frees_units_of_a_later_request() {
    let l = SlidingLog::new(100, 4_000 * MS).unwrap();
    let mut log = VecLog::default();
    assert_eq!(run(&l, &mut log, T0, 50)[0], 1); // A
    assert_eq!(run(&l, &mut log, T0 + 2_000 * MS, 50)[0], 1); // B
    refund(&l, &mut log, T0 + 2_500 * MS, 50); // A settles at 0
                                               // When A's time leaves the window, B's 50 are still in it.
    let c = run(&l, &mut log, T0 + 4_500 * MS, 100);
    assert_eq!(c[..4], [0, 100, 50, 1_500]);
    assert_eq!(run(&l, &mut log, T0 + 6_000 * MS, 100)[0], 1);
}

/// A debit on a log at its limit joins the newest entry, moved to its own
/// time: however many debits, at most `limit + 1` live entries, and no unit
/// leaves before it would have as an entry of its own.
#[test]
fn debits_past_the_limit_join_the_newest_entry() {
    let l = SlidingLog::new(3, 1_000 * MS).unwrap();
    let mut log = VecLog::default();
    let debit = |log: &mut VecLog, now: u64, n: u64| {
        let out = l.debit(log, now, n).unwrap();
        if let Some(w) = out.write {
            log.apply(&w);
        }
        out.decision.reply()
    };
    assert_eq!(debit(&mut log, T0, 2), [1, 3, 1, 0, 1_000]);
    // 4 units: a cost of 1 waits for the oldest entry to leave.
    assert_eq!(debit(&mut log, T0 + 100 * MS, 2), [1, 3, 0, 900, 1_000]);
    assert_eq!(log.0.len(), 2);
    // At its limit: the next debits join the newest entry.
    for i in 1..=100 {
        let r = debit(&mut log, T0 + (100 + i) * MS, 1);
        assert_eq!(r[..3], [1, 3, 0]);
        // The joined entry (2 + i units) leaves a window after its new time.
        assert_eq!(r[3..], [1_000, 1_000]);
    }
    assert_eq!(
        log.0,
        [
            Entry::weighted(T0, 2, 2),
            Entry::weighted(T0 + 200 * MS, 102, 104)
        ]
    );
}

#[test]
fn lapsed_entries_are_trimmed_a_bounded_number_per_write() {
    let l = per_second(10);
    // 1,000 lapsed legacy entries and nothing live.
    let mut log = VecLog::legacy((0..1_000).map(|i| T0 + i * 1_000));
    let later = T0 + 5_000 * MS;
    assert_eq!(run(&l, &mut log, later, 3), [1, 10, 7, 0, 1_000]);
    assert_eq!(log.0.len(), 1_000 - TRIM_MAX + 1);
    for i in 1..=9u64 {
        let r = run(&l, &mut log, later + i * MS, 1);
        assert_eq!(r[..3], [i64::from(i < 8), 10, (7 - i as i64).max(0)]);
    }
    assert_eq!(log.0.iter().filter(|e| e.sum.is_some()).count(), 8);
}

#[test]
fn overflowing_members_are_refused_never_merged() {
    let l = per_second(5);
    let max = VecLog::legacy([u64::MAX]);
    assert_eq!(l.decide(&max, u64::MAX, 3), Err(Corrupt));
    // Read-only decisions still answer.
    assert_eq!(
        l.decide(&max, u64::MAX, 0).unwrap().decision.reply()[..3],
        [1, 5, 4]
    );
    let full = VecLog(vec![Entry::weighted(T0, 1, u64::MAX)]);
    assert_eq!(l.decide(&full, T0 + 1, 1), Err(Corrupt));
    // A legacy entry after a weighted one, or a sum below its cost, is not ours.
    let swapped = VecLog(vec![Entry::weighted(T0, 1, 1), Entry::legacy(T0 + 1)]);
    assert_eq!(l.decide(&swapped, T0 + 2, 1), Err(Corrupt));
    let bad = VecLog(vec![
        Entry::weighted(T0, 3, 7),
        Entry::weighted(T0 + 1, 1, 2),
    ]);
    assert_eq!(l.decide(&bad, T0 + 2, 1), Err(Corrupt));
}

/// The member grammar written the obvious way: fields split on `:`, each
/// of 1 to 20 digits.
fn reference_parse(member: &[u8], score: f64) -> Option<Entry> {
    let digits = |b: &[u8]| {
        if b.is_empty() || b.len() > 20 || !b.iter().all(u8::is_ascii_digit) {
            return None;
        }
        b.iter().try_fold(0u64, |acc, &d| {
            acc.checked_mul(10)?.checked_add(u64::from(d - b'0'))
        })
    };
    let fields: Vec<&[u8]> = member.split(|&b| b == b':').collect();
    let entry = match fields[..] {
        [ns] => Entry::legacy(digits(ns)?),
        [ns, cost, sum] => {
            let (ns, cost, sum) = (digits(ns)?, digits(cost)?, digits(sum)?);
            if cost == 0 || sum < cost {
                return None;
            }
            Entry::weighted(ns, cost, sum)
        }
        _ => return None,
    };
    (score == entry.score() as f64).then_some(entry)
}

#[test]
fn parse_agrees_with_the_obvious_grammar() {
    let pieces: [&[u8]; 12] = [
        b"",
        b":",
        b"0",
        b"1",
        b"5",
        b"9",
        b"00",
        b"x",
        b"18446744073709551615",
        b"18446744073709551616",
        b"00000000000000000001",
        b"1700000000123456789",
    ];
    // Every member of up to four pieces: separators, digits, overflow, junk.
    let mut members = vec![Vec::new()];
    for _ in 0..4 {
        let longer: Vec<Vec<u8>> = members
            .iter()
            .flat_map(|m| pieces.iter().map(move |p| [&m[..], p].concat()))
            .collect();
        members.extend(longer);
        members.dedup();
    }
    for member in &members {
        // The score the first field implies, and two others.
        let first = member.split(|&b| b == b':').next().unwrap_or_default();
        let implied = std::str::from_utf8(first)
            .ok()
            .and_then(|f| f.parse::<u64>().ok())
            .map_or(0.5, |ns| score_of(ns) as f64);
        for score in [implied, 0.0, 1.0] {
            assert_eq!(
                Entry::parse(member, score),
                reference_parse(member, score),
                "{:?}",
                String::from_utf8_lossy(member)
            );
        }
    }
}

#[test]
fn members_round_trip_and_foreign_ones_are_refused() {
    let e = Entry::weighted(1_700_000_000_123_456_789, 100_000, 7_100_000);
    assert_eq!(e.member().as_bytes(), b"1700000000123456789:100000:7100000");
    assert_eq!(
        Entry::parse(e.member().as_bytes(), e.score() as f64),
        Some(e)
    );
    let early = Entry::weighted(5_000, 1, 1);
    assert_eq!(early.member().as_bytes(), b"0000000000000005000:1:1");
    assert_eq!(Entry::parse(early.member().as_bytes(), 5.0), Some(early));
    let legacy = Entry::legacy(1_700_000_000_123_456_789);
    assert_eq!(legacy.member().as_bytes(), b"1700000000123456789");
    assert_eq!(
        Entry::parse(b"1700000000123456789", 1_700_000_000_123_456.0),
        Some(legacy)
    );
    // Members sort by time within a score.
    assert!(Entry::legacy(1_700_000_000_123_456_788).member().as_bytes() < e.member().as_bytes());
    for (bad, score) in [
        (&b"1700000000123456789:0:5"[..], 1_700_000_000_123_456.0),
        (b"1700000000123456789:6:5", 1_700_000_000_123_456.0),
        (b"1700000000123456789:1", 1_700_000_000_123_456.0),
        (b"1700000000123456789:1:1:1", 1_700_000_000_123_456.0),
        (b"1700000000123456789:1:1", 1_700_000_000_123_457.0),
        (b"18446744073709551616", 18_446_744_073_709_551.0),
        (b"1:x:1", 0.0),
        (b"", 0.0),
        (b"lease:a", 0.0),
    ] {
        assert_eq!(
            Entry::parse(bad, score),
            None,
            "{:?}",
            String::from_utf8_lossy(bad)
        );
    }
}

#[test]
fn clock_stepping_back_keeps_entries_unique_and_counted() {
    let l = per_second(4);
    let mut log = VecLog::default();
    run(&l, &mut log, T0, 2);
    let r = run(&l, &mut log, T0 - 5_000 * MS, 2);
    assert_eq!(r[..3], [1, 4, 0]);
    assert_eq!(
        log.0,
        vec![Entry::weighted(T0, 2, 2), Entry::weighted(T0 + 1, 2, 4)]
    );
    assert_eq!(run(&l, &mut log, T0 - 5_000 * MS, 1)[0], 0);
}
