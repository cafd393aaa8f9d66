//! The library's exact arithmetic: at chosen nanoseconds (a test copy of
//! `functions/rl.lua` reads its clock from the key `rl-test:now` instead of
//! `TIME`), every reply, stored value and expiry must equal what the module's
//! own algorithms (`src/algorithm`, compiled into this test) give, on random
//! parameters across the grammar's whole range (counts to 10^12, periods to
//! 3650 days, instants past 2^63 ns), clocks stepping backwards and refunds; and
//! penalties and bans, against the module's penalty rules.

use crate::algorithm::cell::{self, Cell};
use crate::algorithm::fixed::{self, Fixed, FixedState};
use crate::algorithm::gcra::Gcra;
use crate::algorithm::leaky::Leaky;
use crate::algorithm::penalty::{Penalty, Rule};
use crate::algorithm::schedule::InstantLimiter;
use crate::algorithm::sliding::{self, Sliding, SlidingState};
use crate::algorithm::sliding_log::{
    Corrupt, Entry, LogRefund, LogView, LogWrite, SlidingLog, TRIM_MAX,
};
use crate::algorithm::token_bucket::TokenBucket;
use crate::algorithm::{expire_ms, Decision, Wait};
use crate::common::backend::library_source;
use crate::common::*;
use rand::rngs::StdRng;
use rand::seq::IndexedRandom;
use rand::{Rng, SeedableRng};
use std::num::NonZeroU64;

const MS: u64 = 1_000_000;
const COUNTS: [u64; 9] = [
    1,
    2,
    3,
    7,
    10,
    1_000,
    1_000_000,
    999_999_937,
    1_000_000_000_000,
];
const DURATIONS_MS: [u64; 8] = [
    1,
    7,
    1_000,
    1_500,
    60_000,
    3_600_000,
    86_400_000,
    315_360_000_000,
];
const PERIODS_S: [u64; 6] = [1, 7, 60, 3_600, 86_400, 315_360_000];
const STEPS: usize = 400;

// The library decides in doubles where every value fits (debts and windows below
// about 104 days, sliding windows below 2*10^9 ms, instants before 18*10^9 s) and
// exactly elsewhere: parameters on both sides of each bound, and products that
// pass 2^53 (sqrt(2^53) is about 94,906,266).
const EDGE_COUNTS: [u64; 8] = [
    1,
    2,
    5,
    94_906_265,
    94_906_267,
    999_999_937,
    999_999_999_999,
    1_000_000_000_000,
];
const EDGE_DURATIONS_MS: [u64; 8] = [
    86_400_000,
    1_999_999_999,
    2_000_000_000,
    8_888_888_888,
    8_899_999_999,
    8_999_998_999,
    8_999_999_000,
    9_007_199_255,
];
const EDGE_PERIODS_S: [u64; 6] = [1, 3_600, 8_899_999, 8_999_999, 9_007_199, 315_360_000];

/// A server without the module, with the library reading its clock from `rl-test:now`.
fn clocked_library(flavor: Flavor) -> Server {
    let s = Server::start_with(flavor, &["--no-module"]);
    // A test-only function over the library's exact integers:
    // FCALL rl_test_int 0 op a b -> the result(s) in decimal.
    let source = library_source()
        + "\nredis.register_function('rl_test_int', function(_, a)\n\
           api = api or build()\n\
           local i = api.ints\n\
           local x, y = i.big(a[2]), i.big(a[3])\n\
           if a[1] == 'divmod' then local q, r = i.divmod(x, y) return { i.str(q), i.str(r) } end\n\
           if a[1] == 'cmp' then return i.cmp(x, y) end\n\
           return i.str(i[a[1]](x, y))\n\
           end)\n\
           redis.register_function('rl_test_doubles', function(_, a)\n\
           api = api or build()\n\
           local d = api.doubles\n\
           local v = { tonumber(a[2]), tonumber(a[3]), tonumber(a[4]), tonumber(a[5]) }\n\
           if a[1] == 'cmp' then return { tostring(d.mul_cmp(v[1], v[2], v[3], v[4])) } end\n\
           local q, exact = d.muldiv(v[1], v[2], v[3])\n\
           if not q then return { 'none' } end\n\
           return { string.format('%.0f', q), tostring(exact) }\n\
           end)\n";
    // The library reads TIME in one place, clock(); here it returns `rl-test:now`.
    let time = "local t = redis.call('TIME')";
    let patched = source.replace(
        time,
        "do\n      local v = redis.call('GET', 'rl-test:now')\n      \
         local s, n = 0, tonumber(v)\n      \
         if #v > 9 then s, n = tonumber(v:sub(1, -10)), tonumber(v:sub(-9)) end\n      \
         return s, n\n    \
         end\n    local t = redis.call('TIME')",
    );
    assert!(
        source.matches(time).count() == 1,
        "the clock in functions/rl.lua changed: update this test"
    );
    let _: String = redis::cmd("FUNCTION")
        .arg("LOAD")
        .arg("REPLACE")
        .arg(patched)
        .query(&mut s.conn())
        .unwrap();
    s
}

/// Instants start a century after the real clock, so that no absolute expiry
/// the library sets can pass during the test.
fn start_ns(rng: &mut StdRng) -> u64 {
    let real = now_ms() as u64 * MS;
    match rng.random_range(0..4) {
        0 => u64::MAX - rng.random_range(0..(u64::MAX - real) / 4),
        _ => real + 3_155_760_000 * 1_000_000_000 + rng.random_range(0..1u64 << 60),
    }
}

/// The next instant: often close (within a few emission intervals), sometimes
/// far ahead, sometimes backwards, never before `floor` nor past u64.
fn next_now(rng: &mut StdRng, now: u64, floor: u64, unit_ns: u64) -> u64 {
    let step = match rng.random_range(0..10) {
        0 => 0,
        1 => 1,
        2 => rng.random_range(0..=1_000_000_000_000),
        3 => {
            return now
                .saturating_sub(rng.random_range(0..=unit_ns.saturating_mul(3)))
                .max(floor)
        }
        _ => rng.random_range(0..=unit_ns.saturating_mul(3).max(1)),
    };
    now.saturating_add(step).min(u64::MAX - 1)
}

fn set_now(c: &mut redis::Connection, now: u64) {
    let _: () = redis::cmd("SET")
        .arg("rl-test:now")
        .arg(now.to_string())
        .query(c)
        .unwrap();
}

/// The decision as the module's decision layer replies it: waits capped at the
/// expiry cap (`Decision::within_expiry_cap` in decision.rs, applied to every
/// decision command; restated here so the test builds on either side of it).
fn capped(mut d: Decision, now: u64) -> [i64; 5] {
    let horizon =
        (crate::algorithm::MAX_EXPIRE_MS as u128 * MS as u128).saturating_sub(now as u128);
    d.reset_after_ns = d.reset_after_ns.min(horizon);
    if let crate::algorithm::Wait::After(ns) = d.retry_after {
        d.retry_after = crate::algorithm::Wait::After(ns.min(horizon));
    }
    d.reply()
}

/// Integer replies compared; beyond 2^53 (Lua numbers are doubles) to 1 part in 10^12.
fn assert_reply(got: &[i64], want: [i64; 5], what: &str) {
    let same = got.len() == 5
        && got.iter().zip(want).all(|(&g, w)| {
            if g >= 1 << 53 || w >= 1 << 53 {
                ((g as f64 - w as f64) / w as f64).abs() < 1e-12
            } else {
                g == w
            }
        });
    assert!(same, "{what}: library {got:?}, module {want:?}");
}

fn assert_stored(
    c: &mut redis::Connection,
    key: &str,
    value: Option<String>,
    expire: Option<u64>,
    what: &str,
) {
    let got: Option<String> = run(c, &format!("GET {key}"));
    assert_eq!(got, value, "{what}: stored value");
    if let Some(ms) = expire {
        assert_eq!(pexpiretime(c, key), ms as i64, "{what}: expiry");
    }
}

/// A cost (or refund, or quantity) within the grammar: 0 to 10^12.
fn cost(rng: &mut StdRng, most: u64) -> u64 {
    let most = most.min(1_000_000_000_000);
    match rng.random_range(0..8) {
        0 => 0,
        1 => most,
        2 => (most + 1).min(1_000_000_000_000),
        3 => 1_000_000_000_000,
        _ => rng.random_range(1..=most.clamp(1, 5)),
    }
}

/// GCRA, token bucket, leaky bucket: one stored instant.
fn instant_sequences(flavor: Flavor, seed: u64, counts: &[u64], durations_ms: &[u64]) {
    let s = clocked_library(flavor);
    let c = &mut s.conn();
    let mut rng = StdRng::seed_from_u64(seed);
    for round in 0..24 {
        let (a, b) = (
            *counts.choose(&mut rng).unwrap(),
            *counts.choose(&mut rng).unwrap(),
        );
        let period_ms = *durations_ms.choose(&mut rng).unwrap();
        let period_ns = period_ms * MS;
        // `None`: a rate above 1 per ns, which the constructors refuse.
        let (name, limiter, burst): (&str, Option<Box<dyn InstantLimiter>>, u64) = match round % 3 {
            0 => (
                "RL.GCRA",
                Gcra::new(a, period_ns, b).map(|l| Box::new(l) as _),
                b,
            ),
            1 => (
                "RL.TOKENBUCKET",
                TokenBucket::new(b, a, period_ns).map(|l| Box::new(l) as _),
                b,
            ),
            _ => (
                "RL.LEAKY",
                Leaky::new(b, a, period_ns).map(|l| Box::new(l) as _),
                b,
            ),
        };
        let params = match name {
            "RL.GCRA" => format!("{a} {period_ms}ms BURST {b}"),
            _ => format!("{b} {a} {period_ms}ms"),
        };
        let tag = &name[3..].to_lowercase().replace("tokenbucket", "bucket");
        let key = format!("i{round}");
        // One unit must cost at least 1 ns (schedule.rs checked_rate).
        if a > period_ns {
            let e = Backend::Library.err(c, &format!("{name} {key} {params}"));
            assert!(e.contains("must be at most 1 per nanosecond"), "{e}");
            continue;
        }
        let limiter = limiter.expect("a rate of at most 1 per ns");
        let unit = (period_ns / a).max(1);
        let mut now = start_ns(&mut rng);
        let floor = now;
        let mut at: u128 = 0;
        for _ in 0..STEPS {
            now = next_now(&mut rng, now, floor, unit);
            set_now(c, now);
            let n = cost(&mut rng, burst);
            let refund = rng.random_bool(0.1);
            let words = if refund {
                format!("{name} {key} {params} REFUND {n}")
            } else {
                format!("{name} {key} {params} COST {n}")
            };
            let out = if refund {
                limiter.refund(at, now as u128, n)
            } else {
                limiter.decide(at, now as u128, n)
            };
            let what = format!("{words} at {now}");
            assert_reply(
                &Backend::Library.rl(c, &words),
                capped(out.decision, now),
                &what,
            );
            if let Some(t) = out.write {
                at = if t <= now as u128 { 0 } else { t };
            }
            let value = (at > 0).then(|| format!("{tag}:{at}"));
            let expire = (at > 0).then(|| expire_ms(at));
            assert_stored(c, &key, value, expire, &what);
        }
    }
}

/// Fixed and sliding windows: counts in the stored window.
fn window_sequences(flavor: Flavor, seed: u64, counts: &[u64], durations_ms: &[u64]) {
    let s = clocked_library(flavor);
    let c = &mut s.conn();
    let mut rng = StdRng::seed_from_u64(seed);
    for round in 0..24 {
        let limit = *counts.choose(&mut rng).unwrap();
        let mut window_ms = *durations_ms.choose(&mut rng).unwrap();
        let key = format!("w{round}");
        let mut now = start_ns(&mut rng);
        let floor = now;
        let (mut fx, mut sw): (Option<FixedState>, Option<SlidingState>) = (None, None);
        // The expiry the last write set (under the window of its own call).
        let mut expire: Option<u64> = None;
        let fixed = round % 2 == 0;
        let name = if fixed { "RL.FIXED" } else { "RL.SLIDING" };
        for _ in 0..STEPS {
            // Now and then the key's window changes (a plan change): its stored
            // start may then lie off the new window's boundaries.
            if rng.random_bool(0.05) {
                window_ms = *durations_ms.choose(&mut rng).unwrap();
            }
            let window_ns = window_ms * MS;
            now = next_now(&mut rng, now, floor, (window_ns / limit).max(1));
            set_now(c, now);
            let n = cost(&mut rng, limit);
            let charge = Charge::draw(&mut rng, n);
            let option = charge.option();
            let words = format!("{name} {key} {limit} {window_ms}ms {option} {n}");
            let held: Option<String> = run(c, &format!("GET {key}"));
            let what = format!("{words} at {now} on {held:?}");
            let got = Backend::Library.rl(c, &words);
            let (decision, value): (Decision, Option<String>);
            if fixed {
                let f = Fixed::new(limit, window_ns).unwrap();
                let out = match charge {
                    Charge::Cost => f.decide(fx, now, n),
                    Charge::Refund => f.refund(fx, now, n),
                    Charge::Debit => f.debit(fx, now, n),
                };
                decision = out.decision;
                if let Some(st) = out.write {
                    fx = (st.count > 0).then_some(st);
                    expire = fx.map(|s| expire_ms(fixed::idle_at_ns(&s, f.window_ns)));
                }
                value = fx.map(|s| format!("fixed:{}:{}", s.start_ms, s.count));
            } else {
                let w = Sliding::new(limit, window_ns).unwrap();
                let out = match charge {
                    Charge::Cost => w.decide(sw, now, n),
                    Charge::Refund => w.refund(sw, now, n),
                    Charge::Debit => w.debit(sw, now, n),
                };
                decision = out.decision;
                if let Some(st) = out.write {
                    sw = (st.previous > 0 || st.current > 0).then_some(st);
                    expire = sw.map(|s| expire_ms(sliding::idle_at_ns(&s, w.window_ns)));
                }
                value = sw.map(|s| format!("sliding:{}:{}:{}", s.start_ms, s.previous, s.current));
            }
            assert_reply(&got, capped(decision, now), &what);
            assert_stored(c, &key, value, expire, &what);
        }
    }
}

/// What a sequence's call charges.
#[derive(Clone, Copy)]
enum Charge {
    Cost,
    Refund,
    Debit,
}

impl Charge {
    /// The charge of a call of `n` units: a tenth `REFUND`, a tenth `DEBIT` (of at
    /// least 1), else `COST`.
    fn draw(rng: &mut StdRng, n: u64) -> Charge {
        match rng.random_range(0..10) {
            0 => Charge::Refund,
            1 if n > 0 => Charge::Debit,
            _ => Charge::Cost,
        }
    }

    fn option(self) -> &'static str {
        match self {
            Charge::Cost => "COST",
            Charge::Refund => "REFUND",
            Charge::Debit => "DEBIT",
        }
    }
}

/// CL.THROTTLE: redis-cell's rules, including its float emission interval.
fn throttle_sequences(flavor: Flavor, seed: u64, counts: &[u64], periods_s: &[u64]) {
    let s = clocked_library(flavor);
    let c = &mut s.conn();
    let mut rng = StdRng::seed_from_u64(seed);
    let mut rounds = 0;
    while rounds < 24 {
        let max_burst = *[0, 1, 4, 15, 999, 1_000_000_000_000]
            .choose(&mut rng)
            .unwrap();
        let count = *counts.choose(&mut rng).unwrap();
        let period = *periods_s.choose(&mut rng).unwrap();
        let Ok(cell) = Cell::new(max_burst, count, period) else {
            continue;
        };
        rounds += 1;
        let key = format!("t{rounds}");
        let mut now = start_ns(&mut rng);
        let floor = now;
        let mut stored: Option<u64> = None;
        for _ in 0..STEPS {
            now = next_now(&mut rng, now, floor, cell.emission_ns());
            set_now(c, now);
            let q = cost(&mut rng, cell.limit());
            let words = format!("CL.THROTTLE {key} {max_burst} {count} {period} {q}");
            let out = cell::decide(&cell, stored, now, q);
            let what = format!("{words} at {now}");
            assert_reply(&Backend::Library.rl(c, &words), out.reply(), &what);
            if let Some(t) = out.new_tat_ns {
                stored = Some(t);
            }
            let expire = stored.map(|t| expire_ms(t.into()));
            assert_stored(c, &key, stored.map(|t| t.to_string()), expire, &what);
        }
    }
}

/// redis-cell 0.5 turns a duration into seconds through a double
/// (`as_seconds_f64() as i64`): a wait a nanosecond short of 16,777,217 s
/// (2^24 + 1) rounds up to it as a double, then gains the one for its leftover
/// millisecond. The library replies as the module's algorithm does there.
fn throttle_rounds_long_durations_as_redis_cell(flavor: Flavor) {
    let s = clocked_library(flavor);
    let c = &mut s.conn();
    let period = 16_777_217u64;
    let cell = Cell::new(0, 1, period).expect("a valid rate");
    let words = format!("CL.THROTTLE long 0 1 {period}");
    // A century ahead of the server's clock, so no key expires in real time.
    let start = now_ms() as u64 * MS + 3_155_760_000 * 1_000_000_000 + 123_456_789;
    set_now(c, start);
    let first = cell::decide(&cell, None, start, 1);
    assert_reply(&Backend::Library.rl(c, &words), first.reply(), &words);
    let later = start + 1;
    set_now(c, later);
    let denied = cell::decide(&cell, first.new_tat_ns, later, 1);
    assert_eq!(denied.reply(), [1, 1, 0, 16_777_218, 16_777_218]);
    assert_reply(&Backend::Library.rl(c, &words), denied.reply(), &words);
}

/// Sliding-log limits: the file's counts up to the command's cap (100,000).
const LOG_LIMITS: [u64; 7] = [1, 2, 3, 7, 10, 1_000, 100_000];

/// The log as the server's sorted set holds it, for `SlidingLog` to decide on:
/// entries ordered by score, then member; scores are doubles (exact below 2^53
/// us, the year 2255), so every score bound compares as a double, as the
/// module's `store/log.rs` (and the library's `ZRANGEBYSCORE`) compare them.
/// (`sliding_log::testing::VecLog` compares exact integers: the same below
/// 2^53 us, not at the instants past 2^63 ns tested here.)
#[derive(Default)]
struct Zset(Vec<Entry>);

fn double(us: u64) -> f64 {
    us as f64
}

impl LogView for Zset {
    fn len(&self) -> u64 {
        self.0.len() as u64
    }
    fn count_after(&self, cutoff_us: u64) -> Result<u64, Corrupt> {
        let live = |e: &&Entry| double(e.score()) > double(cutoff_us);
        Ok(self.0.iter().filter(live).count() as u64)
    }
    fn scan_after(
        &self,
        cutoff_us: u64,
        visit: &mut dyn FnMut(Entry) -> bool,
    ) -> Result<(), Corrupt> {
        let live = |e: &&Entry| double(e.score()) > double(cutoff_us);
        for e in self.0.iter().filter(live) {
            if !visit(*e) {
                break;
            }
        }
        Ok(())
    }
    fn last_through(&self, score_us: u64) -> Result<Option<Entry>, Corrupt> {
        let through = |e: &&Entry| double(e.score()) <= double(score_us);
        Ok(self.0.iter().rev().find(through).copied())
    }
    fn scan_newest(&self, visit: &mut dyn FnMut(Entry) -> bool) -> Result<(), Corrupt> {
        for e in self.0.iter().rev() {
            if !visit(*e) {
                break;
            }
        }
        Ok(())
    }
    fn at_rank(&self, rank: u64) -> Result<Option<Entry>, Corrupt> {
        Ok(self.0.get(rank as usize).copied())
    }
}

impl Zset {
    fn sort(&mut self) {
        let order = |e: &Entry| (double(e.score()), e.member().as_bytes().to_vec());
        self.0
            .sort_by(|a, b| order(a).partial_cmp(&order(b)).unwrap());
    }

    /// `Key::write_log`: if an entry lapsed, remove at most `TRIM_MAX` entries
    /// scored `<= cutoff_us`, oldest first; then add the entry.
    fn apply(&mut self, w: &LogWrite) {
        if w.lapsed {
            let cutoff = double(w.cutoff_us);
            let lapsed = self.0.iter().take(TRIM_MAX);
            let n = lapsed.take_while(|e| double(e.score()) <= cutoff).count();
            self.0.drain(..n);
        }
        if let Some(joined) = w.replaces {
            self.0.retain(|e| *e != joined);
        }
        self.0.push(w.entry);
        self.sort();
    }

    /// `Key::refund_log` (or the key's deletion): remove the `remove` oldest
    /// entries scored above the cutoff and, if one is rewritten, the next one,
    /// then add its rewrite.
    fn apply_refund(&mut self, r: &LogRefund) {
        if r.newest_left_ns.is_none() {
            self.0.clear();
            return;
        }
        let cutoff = double(r.cutoff_us);
        let first = self
            .0
            .iter()
            .take_while(|e| double(e.score()) <= cutoff)
            .count();
        let take = r.remove as usize + usize::from(r.rewrite.is_some());
        self.0.drain(first..first + take);
        if let Some((_, new)) = r.rewrite {
            self.0.push(new);
            self.sort();
        }
    }
}

/// The stored log as `ZRANGE key 0 -1 WITHSCORES` replies it: members and scores.
fn stored_log(c: &mut redis::Connection, key: &str) -> Vec<(String, f64)> {
    let flat: Vec<String> = run(c, &format!("ZRANGE {key} 0 -1 WITHSCORES"));
    flat.chunks(2)
        .map(|p| (p[0].clone(), p[1].parse().expect("a score")))
        .collect()
}

/// An entry a nanosecond after the newest, when the clock stepped back and that
/// nanosecond starts a new second: its member carries into the seconds' digits.
fn log_entry_carries_into_the_next_second(flavor: Flavor) {
    let s = clocked_library(flavor);
    let c = &mut s.conn();
    let second = now_ms() as u64 / 1_000 + 3_155_760_000;
    let last_ns = second * 1_000_000_000 + 999_999_999;
    set_now(c, last_ns);
    assert_eq!(Backend::Library.rl(c, "RL.SLIDINGLOG carry 5 1h")[0], 1);
    set_now(c, last_ns - 5_000);
    assert_eq!(Backend::Library.rl(c, "RL.SLIDINGLOG carry 5 1h")[0], 1);
    let next = (second + 1) * 1_000_000_000;
    let stored: Vec<String> = run(c, "ZRANGE carry 0 -1 WITHSCORES");
    assert_eq!(
        stored,
        vec![
            format!("{last_ns}:1:1"),
            (last_ns / 1_000).to_string(),
            format!("{next}:1:2"),
            (next / 1_000).to_string(),
        ]
    );
}

/// The fast path reads a log's oldest and newest entries with their scores: an
/// entry scored other than by its member's microsecond, at either end, makes the
/// log foreign, as it does for the module (tests/it/hostile.rs); the valid twin is
/// decided.
fn log_entry_scores_are_checked_at_both_ends(flavor: Flavor) {
    let s = clocked_library(flavor);
    let c = &mut s.conn();
    let now = now_ms() as u64 * 1_000_000;
    set_now(c, now);
    let (old, new) = (now - 2_000_000_000, now - 1_000_000_000);
    let foreign =
        "ERR key holds a value that RL.SLIDINGLOG did not write: use another key or DEL it";
    for (key, old_score, new_score) in [
        ("valid", old / 1_000, new / 1_000),
        ("oldest", old / 1_000 + 1, new / 1_000),
        ("newest", old / 1_000, new / 1_000 + 1),
    ] {
        let _: i64 = run(
            c,
            &format!("ZADD {key} {old_score} {old}:1:1 {new_score} {new}:2:3"),
        );
        let got = redis::cmd("FCALL")
            .arg("rl_slidinglog")
            .arg(1)
            .arg(key)
            .arg(10)
            .arg("1h")
            .query::<Vec<i64>>(c);
        match key {
            "valid" => assert_eq!(got.expect("a decision")[..3], [1, 10, 6]),
            _ => assert_eq!(
                got.expect_err("foreign").detail(),
                Some(&foreign[4..]),
                "{key}"
            ),
        }
    }
}

/// The sliding log: entries, one per admitted request, in a sorted set.
fn log_sequences(flavor: Flavor, seed: u64, limits: &[u64], durations_ms: &[u64]) {
    let s = clocked_library(flavor);
    let c = &mut s.conn();
    let mut rng = StdRng::seed_from_u64(seed);
    for round in 0..24 {
        let limit = *limits.choose(&mut rng).unwrap();
        let window_ms = *durations_ms.choose(&mut rng).unwrap();
        let window_ns = window_ms * MS;
        let l = SlidingLog::new(limit, window_ns).unwrap();
        let key = format!("l{round}");
        let mut now = start_ns(&mut rng);
        let floor = now;
        let mut log = Zset::default();
        // The expected PEXPIRETIME: -2 while the key is absent.
        let mut expire: i64 = -2;
        // A third of the keys start with legacy entries (one unit each, bare
        // nanosecond members) written before `now`, some lapsed (often more
        // than a write trims), some live (possibly more than `limit`).
        if round % 3 == 2 {
            let count = rng.random_range(1..=200);
            let mut at = now.saturating_sub(rng.random_range(0..=window_ns.saturating_mul(2)));
            let mut ns = Vec::new();
            for _ in 0..count {
                at += rng.random_range(1..=(window_ns / count).max(1));
                if at >= now {
                    break;
                }
                ns.push(at);
            }
            log = Zset(ns.into_iter().map(Entry::legacy).collect());
            for e in &log.0 {
                let member = String::from_utf8_lossy(e.member().as_bytes()).into_owned();
                let _: i64 = run(c, &format!("ZADD {key} {} {member}", e.score()));
            }
            if let Some(e) = log.0.last() {
                expire = expire_ms(l.leaves_at_ns(e.ns)) as i64;
                let _: i64 = run(c, &format!("PEXPIREAT {key} {expire}"));
            }
        }
        for _ in 0..STEPS {
            now = next_now(&mut rng, now, floor, (window_ns / limit).max(1));
            set_now(c, now);
            let n = cost(&mut rng, limit);
            let charge = Charge::draw(&mut rng, n);
            let option = charge.option();
            let words = format!("RL.SLIDINGLOG {key} {limit} {window_ms}ms {option} {n}");
            let what = format!("{words} at {now}");
            // The module refuses a log it cannot extend (a nanosecond past u64).
            let outcome = if let Charge::Refund = charge {
                l.refund(&log, now, n).map(|out| {
                    if let Some(r) = out.write {
                        log.apply_refund(&r);
                        expire = r
                            .newest_left_ns
                            .map_or(-2, |ns| expire_ms(l.leaves_at_ns(ns)) as i64);
                    }
                    out.decision
                })
            } else {
                let out = match charge {
                    Charge::Debit => l.debit(&log, now, n),
                    _ => l.decide(&log, now, n),
                };
                out.map(|out| {
                    if let Some(w) = out.write {
                        log.apply(&w);
                        expire = expire_ms(l.idle_at_ns(&w)) as i64;
                    }
                    out.decision
                })
            };
            match outcome {
                Ok(decision) => {
                    let got = Backend::Library.rl(c, &words);
                    assert_reply(&got, capped(decision, now), &what);
                }
                Err(_) => {
                    let e = Backend::Library.err(c, &words);
                    assert!(e.contains("did not write"), "{what}: {e}");
                }
            }
            let want: Vec<(String, f64)> = log
                .0
                .iter()
                .map(|e| {
                    let member = String::from_utf8_lossy(e.member().as_bytes()).into_owned();
                    (member, double(e.score()))
                })
                .collect();
            assert_eq!(stored_log(c, &key), want, "{what}: stored log");
            assert_eq!(pexpiretime(c, &key), expire, "{what}: expiry");
        }
    }
}

/// A random u128 of a random number of decimal digits (so every limb count and
/// both representations, Lua number and limb table, come up).
fn random_u128(rng: &mut StdRng, max_digits: u32) -> u128 {
    let digits = rng.random_range(1..=max_digits);
    let v = rng.random::<u128>() % 10u128.pow(digits);
    match rng.random_range(0..6) {
        0 => 10u128.pow(digits - 1),
        1 => 10u128.pow(digits) - 1,
        2 => (1u128 << 53) - rng.random_range(0..3),
        3 => 10_000_000 * v.min(10u128.pow(30)),
        _ => v,
    }
}

/// The library's integers against Rust's u128: add, sub, mul, divmod and cmp.
fn integers(flavor: Flavor, seed: u64) {
    let s = clocked_library(flavor);
    let c = &mut s.conn();
    let mut rng = StdRng::seed_from_u64(seed);
    for _ in 0..3_000 {
        let (a, b) = (random_u128(&mut rng, 38), random_u128(&mut rng, 38));
        let (a, b) = (a.max(b), a.min(b));
        let call = |c: &mut redis::Connection, op: &str, x: u128, y: u128| -> Value {
            redis::cmd("FCALL")
                .arg(["rl_test_int", "0", op, &x.to_string(), &y.to_string()].as_slice())
                .query(c)
                .unwrap_or_else(|e| panic!("{op} {x} {y}: {e}"))
        };
        let text = |v: Value| -> String { redis::from_redis_value(v).unwrap() };
        if let Some(sum) = a.checked_add(b) {
            assert_eq!(text(call(c, "add", a, b)), sum.to_string(), "{a} + {b}");
        }
        assert_eq!(text(call(c, "sub", a, b)), (a - b).to_string(), "{a} - {b}");
        let (x, y) = (random_u128(&mut rng, 19), random_u128(&mut rng, 19));
        if let Some(product) = x.checked_mul(y) {
            assert_eq!(text(call(c, "mul", x, y)), product.to_string(), "{x} * {y}");
        }
        if b > 0 {
            let got: Vec<String> = redis::from_redis_value(call(c, "divmod", a, b)).unwrap();
            assert_eq!(
                got,
                vec![(a / b).to_string(), (a % b).to_string()],
                "{a} / {b}"
            );
        }
        let ord: i64 = redis::from_redis_value(call(c, "cmp", b, a)).unwrap();
        assert_eq!(ord, b.cmp(&a) as i64, "cmp {b} {a}");
    }
}

/// A random u64 below SMALL (9 * 10^15, the fast paths' bound): every magnitude,
/// the largest values, and values whose products pass 2^53 by a little.
fn random_small(rng: &mut StdRng) -> u64 {
    const SMALL: u64 = 9_000_000_000_000_000;
    match rng.random_range(0..6) {
        0 => rng.random_range(0..1_000),
        1 => SMALL - 1 - rng.random_range(0..3),
        2 => 94_906_265 + rng.random_range(0..3),
        3 => 10u64.pow(rng.random_range(0..16)),
        _ => rng.random_range(0..SMALL) >> rng.random_range(0..53),
    }
}

/// floor(p / d) and whether it is exact, as the library's `muldiv` replies
/// them: no quotient when it is not below 9 * 10^15.
fn quotient(p: u128, d: u64) -> Vec<String> {
    let q = p / d as u128;
    if q >= 9_000_000_000_000_000 {
        return vec!["none".to_string()];
    }
    vec![q.to_string(), (p % d as u128 == 0).to_string()]
}

/// The fast paths' exact products in doubles against Rust's u128: the sign of
/// a*b - c*d, and floor(a*b/d) with whether it is exact.
fn doubles(flavor: Flavor, seed: u64) {
    let s = clocked_library(flavor);
    let c = &mut s.conn();
    let mut rng = StdRng::seed_from_u64(seed);
    let call = |c: &mut redis::Connection, op: &str, v: [u64; 4]| -> Vec<String> {
        let args: Vec<String> = v.iter().map(u64::to_string).collect();
        redis::cmd("FCALL")
            .arg("rl_test_doubles")
            .arg(0)
            .arg(op)
            .arg(&args)
            .query(c)
            .unwrap_or_else(|e| panic!("{op} {v:?}: {e}"))
    };
    for _ in 0..3_000 {
        let (a, b) = (random_small(&mut rng), random_small(&mut rng));
        // Often c*d equals a*b.
        let (x, y) = match rng.random_range(0..4) {
            0 if a % 2 == 0 && b < 4_500_000_000_000_000 => (a / 2, b * 2),
            1 => (b, a),
            _ => (random_small(&mut rng), random_small(&mut rng)),
        };
        let (p, q) = (a as u128 * b as u128, x as u128 * y as u128);
        let sign = call(c, "cmp", [a, b, x, y]);
        assert_eq!(
            sign,
            vec![(p.cmp(&q) as i64).to_string()],
            "cmp {a}*{b} {x}*{y}"
        );
        let d = y.max(1);
        assert_eq!(
            call(c, "muldiv", [a, b, d, 0]),
            quotient(p, d),
            "{a}*{b}/{d}"
        );
        // A product that is a multiple of d, and one more than it.
        let m = rng.random_range(1..1_000);
        if let Some(a2) = d.checked_mul(m).filter(|&v| v < 9_000_000_000_000_000 - 1) {
            for a2 in [a2, a2 + 1] {
                let p = a2 as u128 * b as u128;
                assert_eq!(
                    call(c, "muldiv", [a2, b, d, 0]),
                    quotient(p, d),
                    "{a2}*{b}/{d}"
                );
            }
        }
    }
}

/// The test's seed plus `RL_EXACT_SEED` (0 by default: another value runs another campaign).
/// A GCRA key as the module stores it (codec.rs, store/penalty.rs): the state's
/// instant (0: none), the key's penalty, and its expiry (`None`: no key).
#[derive(Clone, Copy, Default)]
struct Penalized {
    at: u128,
    penalty: Option<Penalty>,
    expire: Option<u64>,
}

impl Penalized {
    /// The stored value: `gcra:<at>`, then `|penalty:<end>:<len>:<keep>`; or the penalty alone.
    fn value(&self) -> Option<String> {
        let penalty = self
            .penalty
            .map(|p| format!("penalty:{}:{}:{}", p.end_ms, p.len_ms, p.keep_ms));
        match (self.at, penalty) {
            (0, p) => p,
            (at, None) => Some(format!("gcra:{at}")),
            (at, Some(p)) => Some(format!("gcra:{at}|{p}")),
        }
    }

    /// Gives the key the penalty `p`, its state unchanged (store/penalty.rs penalize):
    /// it expires no earlier than `p`'s keep.
    fn penalize(&mut self, p: Penalty) {
        self.expire = Some(self.expire.map_or(p.keep_ms, |e| e.max(p.keep_ms)));
        self.penalty = Some(p);
    }

    /// The limiter's write of the instant `t` (at or before now: idle, the state
    /// goes), the penalty `after` kept with it (decision/limiter.rs commit).
    fn write(&mut self, t: u128, now: u64, after: Option<Penalty>) {
        *self = match (t > now as u128, after) {
            (false, None) => Penalized::default(),
            (false, Some(p)) => Penalized {
                at: 0,
                penalty: Some(p),
                expire: Some(p.keep_ms),
            },
            (true, p) => Penalized {
                at: t,
                penalty: p,
                expire: Some(p.map_or(expire_ms(t), |p| expire_ms(t).max(p.keep_ms))),
            },
        };
    }
}

/// GCRA calls with and without `PENALTY d [ESCALATE max]` (`COST`, `COST 0`,
/// `PEEK`, `REFUND`, `DEBIT`) and `RL.BAN` at chosen instants (across the grammar's
/// durations, past 2^63 ns, clocks stepping back): the module's penalty rules
/// (`algorithm/penalty.rs`, compiled here) and its writes (decision/limiter.rs
/// judge and commit, store/penalty.rs, commands/ban.rs, restated above) give the
/// library's replies, stored values and expiries.
fn penalty_sequences(flavor: Flavor, seed: u64) {
    const D_MS: [u64; 7] = [1, 7, 1_000, 60_000, 3_600_000, 86_400_000, 315_360_000_000];
    let s = clocked_library(flavor);
    let c = &mut s.conn();
    let mut rng = StdRng::seed_from_u64(seed);
    // Penalties started, escalated (longer than d), calls during one, bans set.
    let (mut started, mut escalated, mut during, mut bans) = (0, 0, 0, 0);
    for round in 0..16 {
        let rate = *[1u64, 2, 7, 1_000].choose(&mut rng).unwrap();
        let burst = *[1u64, 2, 3, 10].choose(&mut rng).unwrap();
        let period_ms = *[1_000u64, 60_000, 3_600_000, 315_360_000_000]
            .choose(&mut rng)
            .unwrap();
        let gcra = Gcra::new(rate, period_ms * MS, burst).expect("at most 1 per ns");
        let params = format!("{rate} {period_ms}ms BURST {burst}");
        let d = *D_MS.choose(&mut rng).unwrap();
        let max = [
            None,
            Some(d),
            Some(d * 2),
            Some(d * 10),
            Some(315_360_000_000),
        ]
        .choose(&mut rng)
        .unwrap()
        .map(|m| m.min(315_360_000_000));
        let key = format!("p{round}");
        let mut now = start_ns(&mut rng);
        let floor = now;
        let mut m = Penalized::default();
        for _ in 0..STEPS {
            now = next_now(&mut rng, now, floor, d * MS);
            set_now(c, now);
            if rng.random_bool(0.15) {
                let ms = *[0, 0, 1, d, d * 3, 315_360_000_000]
                    .choose(&mut rng)
                    .unwrap();
                let ms = ms.min(315_360_000_000);
                let words = format!("RL.BAN {key} {ms}");
                let existed = m.expire.is_some();
                match (ms, m.penalty) {
                    (0, None) => {}
                    (0, Some(_)) if m.at == 0 => m = Penalized::default(),
                    (0, Some(_)) => m.penalty = None,
                    (ms, before) => {
                        bans += 1;
                        m.penalize(Penalty::from_now(now, ms, before.map_or(0, |b| b.keep_ms)))
                    }
                }
                let got: i64 = run(c, &format!("FCALL rl_ban 1 {key} {ms}"));
                assert_eq!(got, i64::from(existed), "{words} at {now}");
                assert_stored(c, &key, m.value(), m.expire, &format!("{words} at {now}"));
                continue;
            }
            // The call's rule: mostly the round's, sometimes none or a first one.
            let rule = match rng.random_range(0..10) {
                0..=5 => Some((d, max)),
                6 => Some((*D_MS.choose(&mut rng).unwrap(), None)),
                _ => None,
            };
            let n = cost(&mut rng, burst);
            let charge = Charge::draw(&mut rng, n);
            let peek = matches!(charge, Charge::Cost) && rng.random_bool(0.1);
            let mut words = format!("RL.GCRA {key} {params} {} {n}", charge.option());
            if peek {
                words.push_str(" PEEK");
            }
            if let Some((d, max)) = rule {
                words.push_str(&format!(" PENALTY {d}ms"));
                if let Some(max) = max {
                    words.push_str(&format!(" ESCALATE {max}ms"));
                }
            }
            let at = m.at;
            let own = match charge {
                Charge::Cost => gcra.decide(at, now as u128, n),
                Charge::Refund => gcra.refund(at, now as u128, n),
                Charge::Debit => gcra.debit(at, now as u128, n),
            };
            // decision/limiter.rs judge.
            let before = m.penalty;
            let kept = before.filter(|p| p.kept(now));
            let (decision, start) = match (before.filter(|p| p.active(now)), charge) {
                (Some(p), Charge::Cost) if n == 0 => {
                    let one = gcra.decide(at, now as u128, 1).decision;
                    (p.peek_zero(&own.decision, &one, now), None)
                }
                (Some(p), Charge::Cost) => (p.deny(&own.decision, now), None),
                (Some(p), _) => (p.under(&own.decision, now), None),
                (None, charge) => {
                    let d = &own.decision;
                    let starts = matches!(charge, Charge::Cost)
                        && n >= 1
                        && !peek
                        && !d.allowed
                        && d.retry_after != Wait::Never;
                    match rule.filter(|_| starts) {
                        Some((d_ms, max_ms)) => {
                            let rule = Rule {
                                d_ms: NonZeroU64::new(d_ms).unwrap(),
                                max_ms: max_ms.and_then(NonZeroU64::new),
                            };
                            let p = rule.start(before, now);
                            started += 1;
                            escalated += usize::from(p.len_ms > d_ms);
                            (p.deny(&own.decision, now), Some(p))
                        }
                        None => (own.decision, None),
                    }
                }
            };
            let what = format!("{words} at {now}");
            assert_reply(
                &Backend::Library.rl(c, &words),
                capped(decision, now),
                &what,
            );
            during += usize::from(before.is_some_and(|p| p.active(now)));
            if !peek {
                match (start, own.write) {
                    (Some(p), _) => m.penalize(p),
                    (None, Some(t))
                        if !(before.is_some_and(|p| p.active(now))
                            && matches!(charge, Charge::Cost)) =>
                    {
                        m.write(t, now, kept)
                    }
                    _ => {}
                }
            }
            assert_stored(c, &key, m.value(), m.expire, &what);
        }
    }
    eprintln!("{started} penalties started, {escalated} escalated, {during} calls during one, {bans} bans");
    assert!(started > 50 && escalated > 5 && during > 200 && bans > 50);
}

fn seed(base: u64) -> u64 {
    let extra: u64 = std::env::var("RL_EXACT_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    base + extra * 100
}

server_tests! {
    fn exact_integers_equal_u128_arithmetic(flavor) {
        integers(flavor, seed(14));
    }

    fn gcra_token_and_leaky_buckets_are_exact_at_chosen_instants(flavor) {
        instant_sequences(flavor, seed(11), &COUNTS, &DURATIONS_MS);
    }

    fn fixed_and_sliding_windows_are_exact_at_chosen_instants(flavor) {
        window_sequences(flavor, seed(12), &COUNTS, &DURATIONS_MS);
    }

    fn cl_throttle_is_exact_at_chosen_instants(flavor) {
        throttle_sequences(flavor, seed(13), &COUNTS, &PERIODS_S);
    }

    fn cl_throttle_rounds_long_durations_as_redis_cell(flavor) {
        throttle_rounds_long_durations_as_redis_cell(flavor);
    }

    fn sliding_log_is_exact_at_chosen_instants(flavor) {
        log_sequences(flavor, seed(15), &LOG_LIMITS, &DURATIONS_MS);
    }

    fn a_log_entry_carries_into_the_next_second(flavor) {
        log_entry_carries_into_the_next_second(flavor);
    }

    fn a_log_scored_otherwise_at_either_end_is_foreign(flavor) {
        log_entry_scores_are_checked_at_both_ends(flavor);
    }

    fn fast_path_primitives_equal_u128_arithmetic(flavor) {
        doubles(flavor, seed(16));
    }

    fn penalties_and_bans_are_exact_at_chosen_instants(flavor) {
        penalty_sequences(flavor, seed(21));
    }

    fn fast_path_edges_are_exact_at_chosen_instants(flavor) {
        instant_sequences(flavor, seed(17), &EDGE_COUNTS, &EDGE_DURATIONS_MS);
        window_sequences(flavor, seed(18), &EDGE_COUNTS, &EDGE_DURATIONS_MS);
        throttle_sequences(flavor, seed(19), &EDGE_COUNTS, &EDGE_PERIODS_S);
        log_sequences(flavor, seed(20), &LOG_LIMITS, &EDGE_DURATIONS_MS);
    }
}
