//! Unit tests of `lease`.

use super::*;

const MS: u64 = 1_000_000;
const T0: u64 = 1_700_000_000_000 * MS;

/// Leases as (id, lapse_us), in insertion order (the view does not rely on order).
#[derive(Default, Debug)]
struct VecLeases(Vec<(Vec<u8>, u64)>);

impl LeaseView for VecLeases {
    fn held_at(&self, now_us: u64) -> u64 {
        self.0.iter().filter(|(_, l)| *l > now_us).count() as u64
    }
    fn lapse_of(&self, id: &[u8]) -> Option<u64> {
        self.0.iter().find(|(i, _)| i == id).map(|(_, l)| *l)
    }
    fn nth_lapse_after(&self, now_us: u64, k: u64) -> Option<u64> {
        let mut live: Vec<u64> = self
            .0
            .iter()
            .map(|(_, l)| *l)
            .filter(|&l| l > now_us)
            .collect();
        live.sort_unstable();
        live.get(k as usize).copied()
    }
    fn nth_latest(&self, k: u64) -> Option<u64> {
        let mut all: Vec<u64> = self.0.iter().map(|(_, l)| *l).collect();
        all.sort_unstable_by(|a, b| b.cmp(a));
        all.get(k as usize).copied()
    }
}

impl VecLeases {
    /// Drops at most `TRIM_MAX` lapsed leases, soonest first, as the store does.
    fn trim(&mut self, cutoff_us: u64) {
        let mut lapsed: Vec<u64> = self
            .0
            .iter()
            .map(|(_, l)| *l)
            .filter(|&l| l <= cutoff_us)
            .collect();
        lapsed.sort_unstable();
        if let Some(&bound) = lapsed.get(super::super::sliding_log::TRIM_MAX) {
            // Ties at the bound: keep every lease lapsing at `bound` or later.
            self.0.retain(|(_, l)| *l >= bound);
        } else {
            self.0.retain(|(_, l)| *l > cutoff_us);
        }
    }

    fn apply(&mut self, id: &[u8], w: &LeaseWrite) {
        self.trim(w.cutoff_us);
        self.0.retain(|(i, _)| i != id);
        self.0.push((id.to_vec(), w.lapse_us));
        assert_eq!(
            self.nth_latest(0),
            Some(w.latest_us),
            "latest after the write"
        );
    }

    fn apply_release(&mut self, id: &[u8], w: &ReleaseWrite) {
        match *w {
            ReleaseWrite::Delete => self.0.clear(),
            ReleaseWrite::Remove {
                cutoff_us,
                latest_us,
            } => {
                self.trim(cutoff_us);
                self.0.retain(|(i, _)| i != id);
                assert_eq!(self.nth_latest(0), Some(latest_us), "latest after release");
            }
        }
    }
}

fn acquire(l: &Lease, s: &mut VecLeases, now: u64, id: &str) -> [i64; 5] {
    let out = l.acquire(s, now, id.as_bytes());
    assert_eq!(out.decision.allowed, out.write.is_some());
    if let Some(w) = out.write {
        s.apply(id.as_bytes(), &w);
    }
    out.decision.reply()
}

fn release_(s: &mut VecLeases, now: u64, id: &str) -> bool {
    let r = release(s, now, id.as_bytes());
    assert_eq!(r.held, r.write.is_some());
    if let Some(w) = r.write {
        s.apply_release(id.as_bytes(), &w);
    }
    r.held
}

fn three_per_second() -> Lease {
    Lease::new(3, 1_000 * MS).unwrap()
}

#[test]
fn acquire_to_the_limit_then_deny_with_exact_retry() {
    let l = three_per_second();
    let mut s = VecLeases::default();
    assert_eq!(acquire(&l, &mut s, T0, "a"), [1, 3, 2, 0, 1_000]);
    assert_eq!(acquire(&l, &mut s, T0 + 100 * MS, "b"), [1, 3, 1, 0, 1_000]);
    assert_eq!(acquire(&l, &mut s, T0 + 250 * MS, "c"), [1, 3, 0, 0, 1_000]);
    // Full: the next slot frees when "a" lapses at T0 + 1 s; the last lapse is at 1250 ms.
    assert_eq!(acquire(&l, &mut s, T0 + 400 * MS, "d"), [0, 3, 0, 600, 850]);
    // Rounded up: 1 µs before the lapse still waits 1 ms.
    let almost = acquire(&l, &mut s, T0 + 1_000 * MS - 1_000, "d");
    assert_eq!(almost, [0, 3, 0, 1, 251]);
    assert_eq!(s.0.len(), 3, "denials write nothing");
}

#[test]
fn renewals_take_no_slot_and_move_the_lapse() {
    let l = three_per_second();
    let mut s = VecLeases::default();
    acquire(&l, &mut s, T0, "a");
    assert_eq!(acquire(&l, &mut s, T0 + 300 * MS, "a"), [1, 3, 2, 0, 1_000]);
    assert_eq!(s.0, vec![(b"a".to_vec(), us_of(T0 + 1_300 * MS))]);
    acquire(&l, &mut s, T0 + 400 * MS, "b");
    acquire(&l, &mut s, T0 + 500 * MS, "c");
    // Full, yet every holder may renew (a heartbeat), and still holds one slot.
    for (at, id) in [(600, "a"), (700, "b"), (800, "c"), (900, "a")] {
        assert_eq!(acquire(&l, &mut s, T0 + at * MS, id), [1, 3, 0, 0, 1_000]);
    }
    assert_eq!(s.0.len(), 3);
    // "b" lapses first now (renewed at 700 ms): the wait is until 1700 ms.
    assert_eq!(
        acquire(&l, &mut s, T0 + 1_000 * MS, "d"),
        [0, 3, 0, 700, 900]
    );
    // A renewal never moves a lapse earlier (a shorter timeout on this call).
    let short = Lease::new(3, 100 * MS).unwrap();
    assert_eq!(
        acquire(&short, &mut s, T0 + 1_000 * MS, "a"),
        [1, 3, 0, 0, 900]
    );
}

#[test]
fn a_lease_lapses_exactly_at_its_timeout() {
    let l = Lease::new(1, 200 * MS).unwrap();
    let mut s = VecLeases::default();
    assert_eq!(acquire(&l, &mut s, T0, "a"), [1, 1, 0, 0, 200]);
    // One nanosecond before the lapse, its microsecond is not reached yet.
    assert_eq!(acquire(&l, &mut s, T0 + 200 * MS - 1, "b"), [0, 1, 0, 1, 1]);
    // At the lapse the slot is free; the lapsed lease is dropped by the write.
    assert_eq!(acquire(&l, &mut s, T0 + 200 * MS, "b"), [1, 1, 0, 0, 200]);
    assert_eq!(s.0, vec![(b"b".to_vec(), us_of(T0 + 400 * MS))]);
    // A lapsed id acquires a new slot like any other: "a" is not held any more.
    assert_eq!(acquire(&l, &mut s, T0 + 300 * MS, "a")[..4], [0, 1, 0, 100]);
    assert!(!release_(&mut s, T0 + 400 * MS, "b"), "lapsed: not held");
    assert_eq!(s.0.len(), 1, "releasing a lapsed lease writes nothing");
}

#[test]
fn release_frees_a_slot_and_reports_whether_it_was_held() {
    let l = three_per_second();
    let mut s = VecLeases::default();
    acquire(&l, &mut s, T0, "a");
    acquire(&l, &mut s, T0 + 100 * MS, "b");
    acquire(&l, &mut s, T0 + 200 * MS, "c");
    assert_eq!(acquire(&l, &mut s, T0 + 300 * MS, "d")[0], 0);
    // Releasing the latest lease moves the key's expiry to "b"'s lapse.
    let r = release(&s, T0 + 300 * MS, b"c");
    assert_eq!(
        r.write,
        Some(ReleaseWrite::Remove {
            cutoff_us: us_of(T0 + 300 * MS),
            latest_us: us_of(T0 + 1_100 * MS)
        })
    );
    assert!(release_(&mut s, T0 + 300 * MS, "c"));
    assert!(
        !release_(&mut s, T0 + 300 * MS, "c"),
        "twice: no longer held"
    );
    assert!(!release_(&mut s, T0 + 300 * MS, "never"));
    assert_eq!(acquire(&l, &mut s, T0 + 300 * MS, "d"), [1, 3, 0, 0, 1_000]);
    assert!(release_(&mut s, T0 + 400 * MS, "a"));
    assert!(release_(&mut s, T0 + 400 * MS, "b"));
    // The last held lease: the key is deleted.
    assert_eq!(
        release(&s, T0 + 400 * MS, b"d").write,
        Some(ReleaseWrite::Delete)
    );
    assert!(release_(&mut s, T0 + 400 * MS, "d"));
    assert!(s.0.is_empty());
    assert_eq!(acquire(&l, &mut s, T0 + 400 * MS, "e"), [1, 3, 2, 0, 1_000]);
}

#[test]
fn releasing_the_last_held_lease_deletes_even_with_lapsed_ones_stored() {
    let l = three_per_second();
    let mut s = VecLeases(vec![(b"old".to_vec(), us_of(T0))]);
    acquire(&l, &mut s, T0 - 500 * MS, "a");
    assert_eq!(s.0.len(), 2);
    assert_eq!(
        release(&s, T0 + 10 * MS, b"a").write,
        Some(ReleaseWrite::Delete)
    );
}

#[test]
fn ties_in_lapse_times_keep_the_right_latest() {
    let l = three_per_second();
    let mut s = VecLeases::default();
    acquire(&l, &mut s, T0, "a");
    acquire(&l, &mut s, T0, "b");
    assert_eq!(
        release(&s, T0 + 10 * MS, b"a").write,
        Some(ReleaseWrite::Remove {
            cutoff_us: us_of(T0 + 10 * MS),
            latest_us: us_of(T0 + 1_000 * MS)
        })
    );
    // Renewing one of two leases with the same lapse: the other keeps the latest.
    let short = Lease::new(3, MS).unwrap();
    let out = short.acquire(&s, T0, b"a");
    assert_eq!(out.write.map(|w| w.latest_us), Some(us_of(T0 + 1_000 * MS)));
}

#[test]
fn a_lowered_limit_keeps_held_leases_and_waits_for_enough_lapses() {
    let l = three_per_second();
    let mut s = VecLeases::default();
    for (at, id) in [(0, "a"), (100, "b"), (200, "c")] {
        acquire(&l, &mut s, T0 + at * MS, id);
    }
    let one = Lease::new(1, 1_000 * MS).unwrap();
    // Three held, limit 1: a new lease waits until all three have lapsed (1200 ms).
    assert_eq!(
        acquire(&one, &mut s, T0 + 300 * MS, "d"),
        [0, 1, 0, 900, 900]
    );
    // A holder still renews.
    assert_eq!(
        acquire(&one, &mut s, T0 + 300 * MS, "a"),
        [1, 1, 0, 0, 1_000]
    );
}

#[test]
fn a_clock_stepping_back_grants_nothing() {
    let l = Lease::new(2, 1_000 * MS).unwrap();
    let mut s = VecLeases::default();
    acquire(&l, &mut s, T0, "a");
    acquire(&l, &mut s, T0 + 500 * MS, "b");
    // The clock steps back 5 s: both leases are still held, for longer.
    let back = T0 - 5_000 * MS;
    assert_eq!(acquire(&l, &mut s, back, "c"), [0, 2, 0, 6_000, 6_500]);
    // Forward again, past "a"'s lapse, then back before it: "a" is dropped
    // only by a write at or after its lapse, and a dropped lease stays dropped.
    assert_eq!(acquire(&l, &mut s, T0 + 1_000 * MS, "c")[0], 1);
    assert_eq!(
        acquire(&l, &mut s, T0 + 900 * MS, "a"),
        [0, 2, 0, 600, 1_100]
    );
    // A renewal on a stepped-back clock keeps its one slot and its later lapse,
    // so the lease is still held when the clock steps forward again.
    assert_eq!(acquire(&l, &mut s, back, "b"), [1, 2, 0, 0, 7_000]);
    assert_eq!(s.lapse_of(b"b"), Some(us_of(T0 + 1_500 * MS)));
    assert_eq!(s.0.len(), 2);
    assert_eq!(acquire(&l, &mut s, T0 + 1_400 * MS, "d")[0], 0);
    assert_eq!(acquire(&l, &mut s, back, "d")[0], 0);
    // Nothing panics at the ends of time.
    for now in [0, 1, u64::MAX - 1, u64::MAX] {
        let _ = l.acquire(&s, now, b"x").decision.reply();
        let _ = release(&s, now, b"b");
    }
}

#[test]
fn extremes_of_the_grammar_do_not_overflow() {
    let l = Lease::new(1_000_000_000_000, 3650 * 86_400_000 * MS).unwrap();
    let mut s = VecLeases::default();
    let r = acquire(&l, &mut s, T0, "a");
    assert_eq!(
        r,
        [1, 1_000_000_000_000, 999_999_999_999, 0, 3650 * 86_400_000]
    );
    let out = l.acquire(&s, u64::MAX, b"b");
    assert!(out.decision.allowed);
    assert_eq!(
        out.write.map(|w| w.lapse_us),
        Some(u64::MAX / 1_000 + 3650 * 86_400_000_000)
    );
}
