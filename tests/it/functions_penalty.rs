//! Penalties and bans through the Functions library against the module, on a
//! moved clock: one server with the test build of the module (`RL.DEBUG CLOCK`)
//! and the library (with policies written in) reading `TIME` shifted by the same
//! offset (the key `rl-test:offset`). Every call runs on both, on keys of their
//! own, at the same moved instant (up to the real time between the two calls):
//! the replies, the stored state (a penalty's end and keep as instants) and the
//! expiries must agree. Escalation across days, a penalty outlasting its limiter,
//! bans escalated from, `RL.ALL` layers, shadow policies and the sliding log.

use std::time::Instant;

use crate::common::backend::{is_lua_runtime_error, replies_agree};
use crate::common::vectors;
use crate::common::*;
use crate::functions::state;
use crate::functions_policies::library_with;

const MIN: i64 = 60_000;

/// The policies, in the module and written into the library.
const POLICIES: [&str; 4] = [
    "login FIXED 1 15m PENALTY 15m ESCALATE 24h",
    "watch GCRA 1 1h PENALTY 2h ESCALATE 8h SHADOW",
    "slog SLIDINGLOG 2 1h penalty 30m shadow escalate 4h",
    "plain FIXED 2 1h",
];

/// A server with the module's test build and the library, both on one moved clock
/// (functions_quota.rs runs its calendars on it too).
pub(crate) struct Pair {
    server: Server,
    offset_ms: i64,
    /// The most real time between the two calls of a pair so far, plus 2 ms (a
    /// penalty's end is the millisecond rounded up): stored instants and the
    /// times counted from them may differ by that much.
    slack_ms: std::cell::Cell<i64>,
}

impl Pair {
    fn start(flavor: Flavor) -> Pair {
        Pair::start_with(flavor, &POLICIES)
    }

    /// A pair with `policies` set in the module and written into the library.
    pub(crate) fn start_with(flavor: Flavor, policies: &[&str]) -> Pair {
        let server = Server::start_debug(flavor);
        static PAIRS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = PAIRS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let dir = temp_folder(&format!("penalty-{flavor:?}-{n}"));
        let file = dir.join("rl.conf");
        std::fs::write(&file, policies.join("\n") + "\n").unwrap();
        let source = library_with(&file);
        // The library reads TIME in one place, clock(); here it adds the offset.
        let time = "local t = redis.call('TIME')";
        assert_eq!(
            source.matches(time).count(),
            1,
            "the clock in functions/rl.lua changed"
        );
        let patched = source.replace(
            time,
            "local t = redis.call('TIME')\n    \
             do\n      \
             local off = tonumber(redis.call('GET', 'rl-test:offset') or '0')\n      \
             local us = tonumber(t[1]) * 1000000 + tonumber(t[2]) + off * 1000\n      \
             local u = us % 1000000\n      \
             t = { string.format('%.0f', (us - u) / 1000000), string.format('%06d', u) }\n    \
             end",
        );
        let c = &mut server.conn();
        let _: String = redis::cmd("FUNCTION")
            .arg("LOAD")
            .arg("REPLACE")
            .arg(patched)
            .query(c)
            .unwrap();
        for line in policies {
            let _: String = run(c, &format!("RL.POLICY SET {line}"));
        }
        Pair {
            server,
            offset_ms: 0,
            slack_ms: std::cell::Cell::new(0),
        }
    }

    /// Moves both clocks to the real one plus `offset_ms`, or 10 s more if that is
    /// within 5 s of a minute's end: no window of whole minutes ends between the
    /// two calls of a pair. (The scenarios keep every call at least 30 s from a
    /// penalty's end, its memory's, and a limiter's next admission.)
    pub(crate) fn at(&mut self, offset_ms: i64) {
        let phase = (now_ms() + offset_ms).rem_euclid(MIN);
        let offset_ms = match !(5_000..=MIN - 5_000).contains(&phase) {
            true => offset_ms + 10_000,
            false => offset_ms,
        };
        let c = &mut self.server.conn();
        set_clock(c, offset_ms);
        let _: () = run(c, &format!("SET rl-test:offset {offset_ms}"));
        self.offset_ms = offset_ms;
    }

    /// Runs `line` (module words, keys `K` … `K9`) on the module's keys and on the
    /// library's, and checks that the replies, the keys' states and expiries agree.
    /// The module's reply.
    pub(crate) fn both(&self, line: &str) -> Result<Value, String> {
        let c = &mut self.server.conn();
        let words: Vec<Vec<u8>> = line
            .split_whitespace()
            .map(|w| w.as_bytes().to_vec())
            .collect();
        let start = Instant::now();
        let (a, _) = vectors::call(Backend::Module, c, &vectors::keyed(&words, "m"), 0);
        let (b, _) = vectors::call(Backend::Library, c, &vectors::keyed(&words, "l"), 0);
        let slack = self
            .slack_ms
            .get()
            .max(start.elapsed().as_millis() as i64 + 2);
        self.slack_ms.set(slack);
        if let Err(e) = &b {
            assert!(!is_lua_runtime_error(e), "{line}: {e}");
        }
        assert!(
            replies_agree(&a, &b, slack),
            "at {} ms: {line}\n module:  {a:?}\n library: {b:?}",
            self.offset_ms
        );
        for (km, kl) in vectors::keys("m").iter().zip(vectors::keys("l")) {
            let (sm, im) = state(c, km);
            let (sl, il) = state(c, &kl);
            assert_eq!(sm, sl, "after {line}: {km} vs {kl}");
            for (x, y) in im.iter().zip(&il) {
                assert!(
                    (x - y).abs() <= slack as i128 * 1_000_000,
                    "after {line}: {km}: {x} vs {y}"
                );
            }
            let (em, el) = (pexpiretime(c, km), pexpiretime(c, &kl));
            assert!(
                (em - el).abs() <= slack,
                "after {line}: {km} expires at {em} vs {el}"
            );
        }
        a
    }

    /// The module's reply to `line` (checked against the library's), not an error.
    pub(crate) fn ok(&self, line: &str) -> Value {
        self.both(line).unwrap_or_else(|e| panic!("{line}: {e}"))
    }

    /// The five integers of the module's reply to `line` (checked against the library's).
    pub(crate) fn rl(&self, line: &str) -> Vec<i64> {
        match self.both(line) {
            Ok(Value::Array(v)) => v
                .iter()
                .take(5)
                .map(|x| match x {
                    Value::Int(i) => *i,
                    other => panic!("{line}: {other:?}"),
                })
                .collect(),
            other => panic!("{line}: {other:?}"),
        }
    }

    /// The library's key `K<n>`'s penalty as stored: `(end, len, keep)` in ms.
    fn penalty(&self, n: u8) -> Option<(i64, i64, i64)> {
        stored_penalty(&mut self.server.conn(), &format!("l:{n}"))
    }
}

server_tests! {
    fn escalation_doubles_up_to_max_and_forgets_after_it_on_both(flavor) {
        let mut p = Pair::start(flavor);
        for (call, key) in [
            ("RL.FIXED K 1 1m PENALTY 15m ESCALATE 24h", 1),
            ("RL.SLIDINGLOG K2 1 1m PENALTY 15m ESCALATE 24h", 2),
            ("RL.ALL 2 K3 K4 GCRA 1 1m PENALTY 15m ESCALATE 24h FIXED 5 1m", 3),
        ] {
            let mut offset = 0;
            let mut lens = vec![];
            for _ in 0..9 {
                p.at(offset);
                p.rl(call);
                let d = p.rl(call);
                assert_eq!(d[0], 0, "{call}");
                let (_, len, _) = p.penalty(key).unwrap();
                lens.push(len / MIN);
                // During it: denied with or without PENALTY, COST 0 allowed, nothing written.
                p.at(offset + len / 2);
                p.rl(call);
                p.rl(&call.replace(" PENALTY 15m ESCALATE 24h", ""));
                p.rl(&format!("{call} COST 0").replace("GCRA 1 1m PENALTY", "GCRA 1 1m COST 0 PENALTY"));
                // Back 5 minutes after the penalty's end.
                offset += len + 5 * MIN;
            }
            assert_eq!(lens, [15, 30, 60, 120, 240, 480, 960, 1440, 1440], "{call}");
            // More than max after the last end: a first penalty again.
            offset += 24 * 60 * MIN + MIN;
            p.at(offset);
            p.rl(call);
            p.rl(call);
            assert_eq!(p.penalty(key).unwrap().1, 15 * MIN, "{call}");
            // Without ESCALATE (and again past the memory): never longer than d.
            offset += 20 * MIN;
            p.at(offset);
            let plain = call.replace(" ESCALATE 24h", "");
            p.rl(&plain);
            p.rl(&plain);
            assert_eq!(p.penalty(key).unwrap().1, 15 * MIN, "{plain}");
            p.at(offset + 16 * MIN);
            p.rl(&plain);
            p.rl(&plain);
            assert_eq!(p.penalty(key).unwrap().1, 15 * MIN, "{plain}");
        }
    }

    fn a_penalty_outlasts_its_limiter_and_a_write_past_its_memory_drops_it(flavor) {
        let mut p = Pair::start(flavor);
        for limiter in [
            "RL.GCRA K 1 1m",
            "RL.TOKENBUCKET K 1 1 1m",
            "RL.LEAKY K 1 1 1m",
            "RL.SLIDING K 1 1m",
            "RL.SLIDINGLOG K 1 1m",
            "RL.FIXED K 1 1m",
        ] {
            let _: i64 = run(&mut p.server.conn(), "DEL m:1 l:1");
            p.at(0);
            p.rl(limiter);
            p.rl(&format!("{limiter} PENALTY 10m ESCALATE 1h"));
            // After the penalty: admitted, and the write keeps its memory.
            p.at(11 * MIN);
            assert_eq!(p.rl(limiter)[0], 1, "{limiter}");
            assert!(p.penalty(1).is_some(), "{limiter}");
            // A refund (or a debit) to idle leaves only the penalty, until its keep.
            p.rl(&format!("{limiter} REFUND 1"));
            p.rl(&format!("{limiter} DEBIT 1"));
            p.rl(&format!("{limiter} REFUND 5"));
            p.rl(&format!("RL.PEEK {}", &limiter[3..]));
            // The limiter takes the key back over, its memory too.
            assert_eq!(p.rl(limiter)[0], 1, "{limiter}");
            // A second penalty within the memory doubles.
            p.at(12 * MIN + MIN / 2);
            p.rl(limiter);
            p.rl(&format!("{limiter} PENALTY 10m ESCALATE 1h"));
            assert_eq!(p.penalty(1).unwrap().1, 20 * MIN, "{limiter}");
            // Past the memory: the next write drops the penalty.
            p.at(200 * MIN);
            assert_eq!(p.rl(limiter)[0], 1, "{limiter}");
            assert_eq!(p.penalty(1), None, "{limiter}");
        }
    }

    fn bans_replace_penalties_lift_them_and_are_escalated_from(flavor) {
        let mut p = Pair::start(flavor);
        for limiter in ["RL.FIXED K 1 3650d", "RL.SLIDINGLOG K 1 1h", "RL.GCRA K 1 1h"] {
            let _: i64 = run(&mut p.server.conn(), "DEL m:1 l:1");
            p.at(0);
            p.rl(limiter);
            p.ok("RL.BAN K 120000");
            p.rl(limiter);
            p.rl(&format!("RL.PEEK {}", &limiter[3..]));
            // After the ban, the limiter's own denial starts a penalty escalated from
            // the ban (twice 2m), which the key still holds.
            p.at(3 * MIN);
            p.rl(&format!("{limiter} PENALTY 1m ESCALATE 1h"));
            assert_eq!(p.penalty(1).unwrap().1, 4 * MIN, "{limiter}");
            // A ban replaces it (its memory kept), 0 lifts it.
            p.ok("RL.BAN K 600000");
            p.ok("RL.BAN K 600000");
            p.rl(limiter);
            p.at(4 * MIN);
            p.ok("RL.BAN K 0");
            p.ok("RL.BAN K 0");
            p.rl(&format!("{limiter} PEEK"));
            p.ok("RL.BAN K 1");
            p.at(5 * MIN);
            p.rl(&format!("{limiter} COST 0"));
            p.rl(&format!("{limiter} PENALTY 1m ESCALATE 1h"));
            p.at(300 * MIN);
            p.rl(limiter);
            p.ok("RL.BAN K 0");
        }
        // An absent key: only the ban, remembered until its end; the admission after
        // it drops it, so the next penalty is a first one.
        p.at(0);
        p.ok("RL.BAN K2 60000");
        p.rl("RL.SLIDING K2 5 1h");
        p.at(2 * MIN);
        p.rl("RL.SLIDING K2 1 1h PENALTY 1m ESCALATE 1h");
        p.rl("RL.SLIDING K2 1 1h PENALTY 1m ESCALATE 1h");
        assert_eq!(p.penalty(2).unwrap().1, MIN);
        let _: () = run(&mut p.server.conn(), "SET m:4 hello");
        let _: () = run(&mut p.server.conn(), "SET l:4 hello");
        for bad in ["RL.BAN K4 1", "RL.BAN K5 x", "RL.BAN K5 315360000001"] {
            assert!(p.both(bad).is_err(), "{bad}");
        }
        p.ok("RL.BAN K5 60000");
        p.rl("RL.SLIDINGLOG K5 10 1h");
    }

    fn rl_all_starts_each_denying_layers_penalty_on_both(flavor) {
        let mut p = Pair::start(flavor);
        let call = "RL.ALL 3 K K2 K3 FIXED 1 1h PENALTY 10m ESCALATE 2h SLIDINGLOG 2 1h PENALTY 20m ESCALATE 2h GCRA 1 1h BURST 100";
        for half_minutes in [0, 15, 32, 67, 94, 157, 280, 800] {
            p.at(half_minutes * MIN / 2);
            let _ = p.both(call);
            let _ = p.both(call);
            p.ok(&format!("{call} PEEK"));
            p.ok(&call.replace("BURST 100", "BURST 100 REFUND 1"));
            p.ok("RL.ALL 2 K K3 FIXED 1 1h COST 0 GCRA 1 1h BURST 100 COST 0");
        }
    }

    fn policies_penalize_and_shadow_ones_record_as_if_enforced(flavor) {
        let mut p = Pair::start(flavor);
        let c = &mut p.server.conn();
        for name in ["login", "watch", "slog", "plain"] {
            let line: String = run(c, &format!("RL.POLICY GET {name}"));
            assert_eq!(run::<String>(c, &format!("FCALL_RO rl_policy 0 GET {name}")), line);
        }
        assert_eq!(
            run::<String>(c, "FCALL_RO rl_policy 0 GET slog"),
            "slog SLIDINGLOG 2 1h PENALTY 30m SHADOW ESCALATE 4h"
        );
        assert_eq!(run::<String>(c, "FCALL_RO rl_policy 0 DIGEST"), run::<String>(c, "RL.POLICY DIGEST"));
        for half_minutes in [0, 35, 82, 167, 262, 819, 4006] {
            p.at(half_minutes * MIN / 2);
            for call in [
                "RL.LIMIT K login",
                "RL.LIMIT K login",
                "RL.PEEK POLICY K login",
                "RL.PEEK POLICY K login COST 0",
                "RL.LIMIT K login REFUND 1",
                // A shadow: its denials start penalties, answered as admitted; BLOCK never waits.
                "RL.LIMIT K2 watch",
                "RL.LIMIT K2 watch BLOCK 100000000",
                "RL.LIMIT K2 watch",
                "RL.PEEK POLICY K2 watch",
                "RL.LIMIT K3 slog COST 2",
                "RL.LIMIT K3 slog",
                "RL.LIMIT K3 slog PEEK",
                "RL.ALL 3 K6 K7 K8 POLICY login POLICY watch POLICY slog",
                "RL.ALL 3 K6 K7 K8 POLICY login POLICY watch POLICY slog",
                "RL.ALL 2 K6 K9 POLICY login POLICY plain",
                "RL.ALL 2 K7 K9 POLICY watch COST 1 POLICY plain",
            ] {
                let _ = p.both(call);
            }
        }
        assert!(p.penalty(2).is_some() && p.penalty(3).is_some() && p.penalty(7).is_some());
    }
}
