//! `RL.QUOTA` against real servers: periods across DST gaps and folds (New
//! York, Paris, Lord Howe's half hour), fixed-offset zones, month ends of
//! leap and common years and Sunday weeks, on the test build's moved clock;
//! the stored state and its expiry; errors that write nothing; quota and
//! fixed-window keys told apart; plan changes; `RL.ALL`, `RL.PEEK`,
//! policies and `PENALTY`; replication as `SET … PXAT` to a replica without
//! the module.

use crate::common::*;

/// An instant written in RFC 3339, in ms since the epoch.
fn at(text: &str) -> i64 {
    text.parse::<jiff::Timestamp>()
        .expect("an RFC 3339 instant")
        .as_millisecond()
}

/// Moves the test build's clock to `instant` (ms); returns it.
fn clock_at(c: &mut redis::Connection, instant: i64) -> i64 {
    set_clock(c, instant - now_ms());
    instant
}

/// `RL.ALL`'s reply: the binding layer's five integers and each layer's.
fn all(c: &mut redis::Connection, words: &str) -> (Vec<i64>, Vec<Vec<i64>>) {
    let reply: Vec<redis::Value> = run(c, words);
    let ints = reply[..5]
        .iter()
        .map(|x| redis::from_redis_value(x.clone()).unwrap())
        .collect();
    (ints, redis::from_redis_value(reply[5].clone()).unwrap())
}

/// The stored state of `key`: `(start, end, count, calendar)`.
fn state(c: &mut redis::Connection, key: &str) -> (i64, i64, i64, String) {
    let text: String = run(c, &format!("GET {key}"));
    let rest = text
        .strip_prefix("quota:")
        .unwrap_or_else(|| panic!("{text}"));
    let rest = rest.split('|').next().unwrap();
    let mut f = rest.splitn(4, ':');
    let mut num = || f.next().unwrap().parse::<i64>().unwrap();
    let (s, e, n) = (num(), num(), num());
    (s, e, n, f.next().unwrap().to_string())
}

/// A call's reply with the clock set `ms` before `instant`: the time the
/// test takes between setting the clock and the call is at most this.
const SLACK: i64 = 2_000;

/// (call's calendar, clock, the period's start and end, the stored calendar).
/// In 2040-2041 (a leap year and a common one): the server's own clock
/// expires keys, so a period must end after the real now. (A future release
/// of the time zone database that changes these zones' rules for 2040 would
/// change these rows.)
const PERIODS: &[(&str, &str, &str, &str, &str)] = &[
    // New York: the spring-forward day is 23 hours, the fall-back day 25.
    (
        "DAY TZ America/New_York",
        "2040-03-11T12:00:00-04:00",
        "2040-03-11T00:00:00-05:00",
        "2040-03-12T00:00:00-04:00",
        "DAY 2001-01-01T00:00 America/New_York",
    ),
    (
        "DAY TZ america/new_york",
        "2040-11-04T12:00:00-05:00",
        "2040-11-04T00:00:00-04:00",
        "2040-11-05T00:00:00-05:00",
        "DAY 2001-01-01T00:00 America/New_York",
    ),
    // 02:30 is in the gap on 2040-03-11: the renewal is the transition, 03:00 EDT.
    (
        "DAY TZ America/New_York ANCHOR 2001-01-01T02:30",
        "2040-03-11T01:00:00-05:00",
        "2040-03-10T02:30:00-05:00",
        "2040-03-11T03:00:00-04:00",
        "DAY 2001-01-01T02:30 America/New_York",
    ),
    (
        "DAY TZ America/New_York ANCHOR 2001-01-01T02:30",
        "2040-03-11T04:00:00-04:00",
        "2040-03-11T03:00:00-04:00",
        "2040-03-12T02:30:00-04:00",
        "DAY 2001-01-01T02:30 America/New_York",
    ),
    // 01:30 happens twice on 2040-11-04: its first occurrence (EDT) renews.
    (
        "DAY TZ America/New_York ANCHOR 2001-01-01T01:30",
        "2040-11-04T01:15:00-05:00",
        "2040-11-04T01:30:00-04:00",
        "2040-11-05T01:30:00-05:00",
        "DAY 2001-01-01T01:30 America/New_York",
    ),
    // Paris: the gap (02:15 on 2040-03-25) and the fold (02:30 on 2040-10-28).
    (
        "DAY TZ Europe/Paris ANCHOR 2001-01-01T02:15",
        "2040-03-25T12:00:00+02:00",
        "2040-03-25T03:00:00+02:00",
        "2040-03-26T02:15:00+02:00",
        "DAY 2001-01-01T02:15 Europe/Paris",
    ),
    (
        "DAY TZ Europe/Paris ANCHOR 2001-01-01T02:30",
        "2040-10-28T02:40:00+01:00",
        "2040-10-28T02:30:00+02:00",
        "2040-10-29T02:30:00+01:00",
        "DAY 2001-01-01T02:30 Europe/Paris",
    ),
    (
        "MONTH TZ Europe/Paris ANCHOR 2001-01-15T00:00",
        "2040-04-01T00:00:00Z",
        "2040-03-15T00:00:00+01:00",
        "2040-04-15T00:00:00+02:00",
        "MONTH 2001-01-15T00:00 Europe/Paris",
    ),
    // Lord Howe moves by 30 minutes: 02:10 on 2040-10-07 is in the gap (02:00 to 02:30).
    (
        "DAY TZ Australia/Lord_Howe ANCHOR 2001-01-01T02:10",
        "2040-10-07T12:00:00+11:00",
        "2040-10-07T02:00:00+10:30",
        "2040-10-08T02:10:00+11:00",
        "DAY 2001-01-01T02:10 Australia/Lord_Howe",
    ),
    (
        "DAY TZ Australia/Lord_Howe ANCHOR 2001-01-01T01:45",
        "2040-04-01T12:00:00+10:30",
        "2040-04-01T01:45:00+11:00",
        "2040-04-02T01:45:00+10:30",
        "DAY 2001-01-01T01:45 Australia/Lord_Howe",
    ),
    (
        "DAY TZ Australia/Lord_Howe",
        "2040-10-07T12:00:00+11:00",
        "2040-10-07T00:00:00+10:30",
        "2040-10-08T00:00:00+11:00",
        "DAY 2001-01-01T00:00 Australia/Lord_Howe",
    ),
    // Kolkata (+05:30 all year) and the same as a fixed offset.
    (
        "DAY TZ Asia/Kolkata",
        "2040-06-01T20:00:00Z",
        "2040-06-01T18:30:00Z",
        "2040-06-02T18:30:00Z",
        "DAY 2001-01-01T00:00 Asia/Kolkata",
    ),
    (
        "DAY TZ +05:30",
        "2040-06-01T20:00:00Z",
        "2040-06-01T18:30:00Z",
        "2040-06-02T18:30:00Z",
        "DAY 2001-01-01T00:00 +05:30",
    ),
    (
        "WEEK TZ -08:00 ANCHOR 2001-01-01T09:00",
        "2040-12-12T00:00:00Z",
        "2040-12-10T09:00:00-08:00",
        "2040-12-17T09:00:00-08:00",
        "WEEK 2001-01-01T09:00 -08:00",
    ),
    // UTC by default; the default anchor renews at midnight, on Mondays, on the 1st.
    (
        "MONTH",
        "2040-12-12T00:00:00Z",
        "2040-12-01T00:00:00Z",
        "2041-01-01T00:00:00Z",
        "MONTH 2001-01-01T00:00 UTC",
    ),
    (
        "WEEK TZ utc",
        "2040-12-12T12:00:00Z",
        "2040-12-10T00:00:00Z",
        "2040-12-17T00:00:00Z",
        "WEEK 2001-01-01T00:00 UTC",
    ),
    (
        "DAY",
        "2040-12-12T12:00:00Z",
        "2040-12-12T00:00:00Z",
        "2040-12-13T00:00:00Z",
        "DAY 2001-01-01T00:00 UTC",
    ),
    // A week anchored on a Sunday, across the spring-forward Sunday (167 hours).
    (
        "WEEK TZ America/New_York ANCHOR 2026-01-04T00:00",
        "2040-03-13T12:00:00Z",
        "2040-03-11T00:00:00-05:00",
        "2040-03-18T00:00:00-04:00",
        "WEEK 2026-01-04T00:00 America/New_York",
    ),
    // Month ends: the 29th, 30th and 31st renew on February's last day.
    (
        "MONTH ANCHOR 2001-01-29T00:00",
        "2041-03-01T00:00:00Z",
        "2041-02-28T00:00:00Z",
        "2041-03-29T00:00:00Z",
        "MONTH 2001-01-29T00:00 UTC",
    ),
    (
        "MONTH ANCHOR 2001-01-30T00:00",
        "2041-03-01T00:00:00Z",
        "2041-02-28T00:00:00Z",
        "2041-03-30T00:00:00Z",
        "MONTH 2001-01-30T00:00 UTC",
    ),
    (
        "MONTH ANCHOR 2001-01-31T00:00",
        "2041-03-01T00:00:00Z",
        "2041-02-28T00:00:00Z",
        "2041-03-31T00:00:00Z",
        "MONTH 2001-01-31T00:00 UTC",
    ),
    (
        "MONTH ANCHOR 2001-01-29T00:00",
        "2040-03-01T00:00:00Z",
        "2040-02-29T00:00:00Z",
        "2040-03-29T00:00:00Z",
        "MONTH 2001-01-29T00:00 UTC",
    ),
    (
        "MONTH ANCHOR 2001-01-30T00:00",
        "2040-03-01T00:00:00Z",
        "2040-02-29T00:00:00Z",
        "2040-03-30T00:00:00Z",
        "MONTH 2001-01-30T00:00 UTC",
    ),
    (
        "MONTH ANCHOR 2001-01-31T00:00",
        "2040-03-01T00:00:00Z",
        "2040-02-29T00:00:00Z",
        "2040-03-31T00:00:00Z",
        "MONTH 2001-01-31T00:00 UTC",
    ),
    (
        "MONTH ANCHOR 2001-01-31T00:00",
        "2040-02-10T00:00:00Z",
        "2040-01-31T00:00:00Z",
        "2040-02-29T00:00:00Z",
        "MONTH 2001-01-31T00:00 UTC",
    ),
    (
        "MONTH ANCHOR 2001-01-31T00:00 TZ America/New_York",
        "2040-05-01T12:00:00Z",
        "2040-04-30T00:00:00-04:00",
        "2040-05-31T00:00:00-04:00",
        "MONTH 2001-01-31T00:00 America/New_York",
    ),
];

server_tests! {
    fn periods_follow_the_zones_wall_clock(flavor) {
        let s = Server::start_debug(flavor);
        let c = &mut s.conn();
        for &(calendar, now, start, end, text) in PERIODS {
            let (start, end) = (at(start), at(end));
            let _: i64 = run(c, "DEL q");
            // Just before the renewal the period is the one holding `now`.
            let t = clock_at(c, at(now));
            let r = rl(c, &format!("RL.QUOTA q 5 {calendar}"));
            assert_eq!(r[..4], [1, 5, 4, 0], "{calendar} at {now}");
            within(r[4], end - t - SLACK, end - t + 1);
            assert_eq!(state(c, "q"), (start, end, 1, text.to_string()), "{calendar} at {now}");
            assert_eq!(pexpiretime(c, "q"), end, "{calendar}: the key expires at the renewal");
            // The period's last seconds still count in it; at the renewal the count starts again.
            clock_at(c, end - 3 * SLACK);
            assert_eq!(rl(c, &format!("RL.QUOTA q 5 {calendar} COST 4"))[..3], [1, 5, 0]);
            let denied = rl(c, &format!("RL.QUOTA q 5 {calendar}"));
            assert_eq!(denied[..3], [0, 5, 0]);
            within(denied[3], 2 * SLACK, 3 * SLACK);
            assert_eq!(denied[3], denied[4]);
            clock_at(c, end);
            let r = rl(c, &format!("RL.QUOTA q 5 {calendar}"));
            assert_eq!(r[..4], [1, 5, 4, 0], "{calendar}: renewed at {end}");
            let (next_start, next_end, count, _) = state(c, "q");
            assert_eq!((next_start, count), (end, 1), "{calendar}");
            assert!(next_end > end);
        }
        // Samoa skipped 2011-12-30: the day before it ends at the next midnight
        // (+14:00), and the next day is a whole one. (In the past: the server
        // expires the key at once, so only the replies tell.)
        let _: i64 = run(c, "DEL q");
        let t = clock_at(c, at("2011-12-30T09:00:00Z"));
        let r = rl(c, "RL.QUOTA q 5 DAY TZ Pacific/Apia");
        within(r[4], at("2011-12-31T00:00:00+14:00") - t - SLACK, at("2011-12-31T00:00:00+14:00") - t + 1);
        let t = clock_at(c, at("2011-12-30T11:00:00Z"));
        let r = rl(c, "RL.QUOTA q 5 DAY TZ Pacific/Apia");
        within(r[4], at("2012-01-01T00:00:00+14:00") - t - SLACK, at("2012-01-01T00:00:00+14:00") - t + 1);
        set_clock(c, 0);
    }

    fn bad_zones_anchors_and_units_are_errors_that_write_nothing(flavor) {
        let s = Server::start(flavor);
        let c = &mut s.conn();
        let before = dirty(c);
        let cases = [
            ("RL.QUOTA q 5 DAY TZ Mars/Olympus", "ERR unknown time zone 'Mars/Olympus': expected UTC, an offset such as +05:30 or -08:00, or an IANA name such as Europe/Paris"),
            ("RL.QUOTA q 5 DAY TZ +24:00", "ERR unknown time zone '+24:00': expected UTC, an offset such as +05:30 or -08:00, or an IANA name such as Europe/Paris"),
            ("RL.QUOTA q 5 DAY TZ UTC+1", "ERR unknown time zone 'UTC+1': expected UTC, an offset such as +05:30 or -08:00, or an IANA name such as Europe/Paris"),
            ("RL.QUOTA q 5 DAY ANCHOR 2001-02-29T00:00", "ERR ANCHOR must be a local date and time yyyy-mm-ddThh:mm (such as 2001-01-15T00:00)"),
            ("RL.QUOTA q 5 DAY ANCHOR 2001-01-01", "ERR ANCHOR must be a local date and time yyyy-mm-ddThh:mm (such as 2001-01-15T00:00)"),
            ("RL.QUOTA q 5 DAY ANCHOR 2001-01-01T24:00", "ERR ANCHOR must be a local date and time yyyy-mm-ddThh:mm (such as 2001-01-15T00:00)"),
            ("RL.QUOTA q 5 YEAR", "ERR unit must be DAY, WEEK or MONTH"),
            ("RL.QUOTA q 5 1d", "ERR unit must be DAY, WEEK or MONTH"),
            ("RL.QUOTA q 0 DAY", "ERR limit must be an integer from 1 to 1000000000000"),
            ("RL.QUOTA q 5 DAY TZ UTC TZ UTC", "ERR option TZ given more than once"),
            ("RL.QUOTA q 5 DAY ANCHOR", "ERR option ANCHOR needs a value"),
            ("RL.QUOTA q 5 DAY BURST 2", "ERR unknown option 'BURST' for 'rl.quota' (expected TZ, ANCHOR, COST, REFUND, DEBIT, PEEK, BLOCK or PENALTY)"),
            ("RL.QUOTA q 5", "ERR wrong number of arguments for 'rl.quota' command"),
            ("RL.ALL 1 q QUOTA 5 DAY TZ Nowhere", "ERR unknown time zone 'Nowhere': expected UTC, an offset such as +05:30 or -08:00, or an IANA name such as Europe/Paris"),
            ("RL.ALL 1 q QUOTA 5 DAY BLOCK 5", "ERR unknown option 'BLOCK' in RL.ALL clause QUOTA (expected TZ, ANCHOR, COST, REFUND, DEBIT or PENALTY)"),
            ("RL.PEEK QUOTA q 5 WEEK ANCHOR x", "ERR ANCHOR must be a local date and time yyyy-mm-ddThh:mm (such as 2001-01-15T00:00)"),
            ("RL.POLICY SET p QUOTA 5 MONTH TZ Atlantis", "ERR unknown time zone 'Atlantis': expected UTC, an offset such as +05:30 or -08:00, or an IANA name such as Europe/Paris"),
            ("RL.FIXED GCRA 5 1h TZ UTC", "ERR unknown option 'TZ' for 'rl.fixed' (expected COST, REFUND, DEBIT, PEEK, BLOCK or PENALTY)"),
        ];
        for (call, error) in cases {
            assert_eq!(rl_err(c, call), error, "{call}");
        }
        assert_eq!(run::<i64>(c, "EXISTS q p"), 0);
        assert_eq!(dirty(c), before);
        // A zone in any case is stored as the database spells it.
        rl(c, "RL.QUOTA q 5 DAY TZ ASIA/KOLKATA");
        assert!(state(c, "q").3.ends_with(" Asia/Kolkata"));
    }

    fn quota_and_fixed_window_keys_are_not_confused(flavor) {
        let s = Server::start(flavor);
        let c = &mut s.conn();
        rl(c, "RL.QUOTA q 5 DAY");
        assert!(info(c, "rl", "rl_quota").starts_with("calls=1,admitted=1,"));
        rl(c, "RL.FIXED f 5 1d");
        let (q, f): (String, String) = (run(c, "GET q"), run(c, "GET f"));
        assert_eq!(rl_err(c, "RL.FIXED q 5 1d"), "ERR key holds RL.QUOTA state, not RL.FIXED state: use another key or DEL it");
        assert_eq!(rl_err(c, "RL.QUOTA f 5 DAY"), "ERR key holds RL.FIXED state, not RL.QUOTA state: use another key or DEL it");
        assert_eq!(rl_err(c, "RL.GCRA q 5 1d"), "ERR key holds RL.QUOTA state, not RL.GCRA state: use another key or DEL it");
        let _: () = run(c, "SET x hello");
        assert_eq!(rl_err(c, "RL.QUOTA x 5 DAY"), "ERR key holds a value that RL.QUOTA did not write: use another key or DEL it");
        let _: () = run(c, "SET y quota:1:2:3");
        assert_eq!(rl_err(c, "RL.QUOTA y 5 DAY"), "ERR key holds a value that RL.QUOTA did not write: use another key or DEL it");
        let _: i64 = run(c, "RPUSH l a");
        assert!(rl_err(c, "RL.QUOTA l 5 DAY").starts_with("WRONGTYPE"));
        assert_eq!((run::<String>(c, "GET q"), run::<String>(c, "GET f")), (q, f));
        assert_eq!(run::<String>(c, "GET y"), "quota:1:2:3");
    }

    fn denials_peeks_and_cost_zero_write_nothing(flavor) {
        let s = Server::start_debug(flavor);
        let c = &mut s.conn();
        let t = clock_at(c, at("2040-12-12T12:00:00Z"));
        let end = at("2041-01-01T00:00:00Z");
        assert_eq!(rl(c, "RL.QUOTA q 3 MONTH COST 3")[..4], [1, 3, 0, 0]);
        let before = (dirty(c), run::<String>(c, "GET q"));
        let denied = rl(c, "RL.QUOTA q 3 MONTH");
        assert_eq!(denied[..3], [0, 3, 0]);
        within(denied[3], end - t - SLACK, end - t + 1);
        assert_eq!(denied[4], denied[3]);
        assert_eq!(rl(c, "RL.QUOTA q 3 MONTH COST 4")[3], -1);
        assert_eq!(rl(c, "RL.QUOTA q 3 MONTH COST 0")[..3], [1, 3, 0]);
        assert_eq!(rl(c, "RL.QUOTA q 3 MONTH PEEK")[..3], [0, 3, 0]);
        assert_eq!(rl(c, "RL.PEEK QUOTA q 3 MONTH")[..3], [0, 3, 0]);
        assert_eq!((dirty(c), run::<String>(c, "GET q")), before);
        // A refund gives units back in the period; all of them deletes the key.
        assert_eq!(rl(c, "RL.QUOTA q 3 MONTH REFUND 1")[..3], [1, 3, 1]);
        assert_eq!(state(c, "q").2, 2);
        assert_eq!(rl(c, "RL.QUOTA q 3 MONTH DEBIT 5")[..3], [1, 3, 0]);
        assert_eq!(state(c, "q").2, 7);
        rl(c, "RL.QUOTA q 3 MONTH REFUND 9");
        assert_eq!(run::<i64>(c, "EXISTS q"), 0);
        assert_eq!(rl(c, "RL.QUOTA q 3 MONTH COST 0"), [1, 3, 3, 0, 0]);
        set_clock(c, 0);
    }

    fn plan_changes_keep_spent_units_until_the_period_ends(flavor) {
        let s = Server::start_debug(flavor);
        let c = &mut s.conn();
        // 2040-12-12T12:00Z: the UTC month began 2040-12-01; Kolkata's day 2040-12-11T18:30Z.
        clock_at(c, at("2040-12-12T12:00:00Z"));
        rl(c, "RL.QUOTA q 10 MONTH COST 6");
        // A new limit applies at once to the stored count.
        assert_eq!(rl(c, "RL.QUOTA q 8 MONTH")[..3], [1, 8, 1]);
        assert_eq!(rl(c, "RL.QUOTA q 5 MONTH")[..3], [0, 5, 0]);
        // A new calendar: its own current period, the count carried over.
        assert_eq!(rl(c, "RL.QUOTA q 10 DAY TZ Asia/Kolkata")[..3], [1, 10, 2]);
        assert_eq!(
            state(c, "q"),
            (at("2040-12-12T00:00:00+05:30"), at("2040-12-13T00:00:00+05:30"), 8, "DAY 2001-01-01T00:00 Asia/Kolkata".into())
        );
        assert_eq!(pexpiretime(c, "q"), at("2040-12-13T00:00:00+05:30"));
        // A denial under another calendar writes nothing: the key keeps its own.
        assert_eq!(rl(c, "RL.QUOTA q 8 WEEK COST 5")[..3], [0, 8, 0]);
        assert_eq!(state(c, "q").3, "DAY 2001-01-01T00:00 Asia/Kolkata");
        // Once the stored period has ended, another calendar starts from 0.
        clock_at(c, at("2040-12-13T00:00:00+05:30"));
        assert_eq!(rl(c, "RL.QUOTA q 10 WEEK ANCHOR 2026-01-04T00:00")[..3], [1, 10, 9]);
        assert_eq!(state(c, "q"), (at("2040-12-09T00:00:00Z"), at("2040-12-16T00:00:00Z"), 1, "WEEK 2026-01-04T00:00 UTC".into()));
        // A clock that steps back before the stored start stays in the stored period.
        clock_at(c, at("2040-12-08T00:00:00Z"));
        assert_eq!(rl(c, "RL.QUOTA q 10 WEEK ANCHOR 2026-01-04T00:00")[..3], [1, 10, 8]);
        assert_eq!(state(c, "q").0, at("2040-12-09T00:00:00Z"));
        set_clock(c, 0);
    }

    fn all_peek_and_policies_take_quotas(flavor) {
        let s = Server::start_debug(flavor);
        let c = &mut s.conn();
        let t = clock_at(c, at("2040-12-12T12:00:00Z"));
        let end = at("2041-01-01T00:00:00+01:00");
        let (_, r) = all(c, "RL.ALL 2 a b QUOTA 2 MONTH TZ Europe/Paris GCRA 10 1s COST 1");
        assert_eq!(r[0][..3], [1, 2, 1]);
        assert_eq!(state(c, "a"), (at("2040-12-01T00:00:00+01:00"), end, 1, "MONTH 2001-01-01T00:00 Europe/Paris".into()));
        let (first, r) = all(c, "RL.ALL 2 a b QUOTA 2 MONTH TZ Europe/Paris COST 2 GCRA 10 1s");
        assert_eq!((first[0], r[0][0]), (0, 0));
        assert_eq!(state(c, "a").2, 1, "a denied RL.ALL writes nothing");
        within(r[0][3], end - t - SLACK, end - t + 1);
        assert_eq!(rl(c, "RL.PEEK QUOTA a 2 MONTH TZ europe/paris")[..3], [1, 2, 0]);
        assert_eq!(rl(c, "RL.PEEK QUOTA a 2 MONTH TZ Europe/Paris COST 2")[..3], [0, 2, 1]);
        // A policy with a quota, its words kept as given.
        let ok: String = run(c, "RL.POLICY SET plan QUOTA 3 WEEK TZ -08:00 ANCHOR 2026-01-04T09:00 PENALTY 1m");
        assert_eq!(ok, "OK");
        let words: String = run(c, "RL.POLICY GET plan");
        assert_eq!(words, "plan QUOTA 3 WEEK TZ -08:00 ANCHOR 2026-01-04T09:00 PENALTY 1m");
        assert_eq!(rl(c, "RL.LIMIT u plan COST 3")[..3], [1, 3, 0]);
        assert_eq!(
            state(c, "u"),
            (at("2040-12-09T09:00:00-08:00"), at("2040-12-16T09:00:00-08:00"), 3, "WEEK 2026-01-04T09:00 -08:00".into())
        );
        assert_eq!(rl(c, "RL.LIMIT u plan")[0], 0);
        assert!(stored_penalty(c, "u").is_some(), "the policy's denial started its penalty");
        assert_eq!(rl(c, "RL.PEEK POLICY u plan")[0], 0);
        let (first, r) = all(c, "RL.ALL 2 v w POLICY plan QUOTA 1 DAY");
        assert_eq!((first[0], r[0][0], r[1][0]), (1, 1, 1));
        assert_eq!(state(c, "w"), (at("2040-12-12T00:00:00Z"), at("2040-12-13T00:00:00Z"), 1, "DAY 2001-01-01T00:00 UTC".into()));
        set_clock(c, 0);
    }

    fn a_quota_denial_starts_a_penalty(flavor) {
        let s = Server::start_debug(flavor);
        let c = &mut s.conn();
        let t = clock_at(c, at("2040-12-12T12:00:00Z"));
        let end = at("2040-12-13T00:00:00Z");
        assert_eq!(rl(c, "RL.QUOTA q 1 DAY PENALTY 1d")[0], 1);
        let before = dirty(c);
        let r = rl(c, "RL.QUOTA q 1 DAY PENALTY 1d");
        assert_eq!(dirty(c), before + 1, "one write starts the penalty");
        assert_eq!(r[..3], [0, 1, 0]);
        within(r[3], 86_400_000 - SLACK, 86_400_001);
        let (pend, len, keep) = stored_penalty(c, "q").unwrap();
        assert_eq!((len, keep), (86_400_000, pend));
        within(pend, t + len, t + len + SLACK);
        assert_eq!(state(c, "q").2, 1);
        // The key lives until the penalty's end, past the period's.
        assert_eq!(pexpiretime(c, "q"), keep);
        // After the renewal the penalty still denies; after it, the quota admits.
        clock_at(c, end + 1_000);
        assert_eq!(rl(c, "RL.QUOTA q 1 DAY")[0], 0);
        clock_at(c, pend + 1);
        assert_eq!(rl(c, "RL.QUOTA q 1 DAY")[..3], [1, 1, 0]);
        let text: String = run(c, "GET q");
        assert!(!text.contains("penalty"), "{text}: the penalty (no ESCALATE) is forgotten at its end");
        // The longest states (a 32-byte zone, a 12-digit count, a penalty with
        // its memory) are read whole by RL.PEEK's copy as well.
        let long = "RL.QUOTA lq 1000000000000 MONTH TZ America/Argentina/ComodRivadavia ANCHOR 2001-01-31T23:59";
        assert_eq!(rl(c, &format!("{long} COST 999999999999"))[0], 1);
        assert_eq!(rl(c, &format!("{long} COST 2 PENALTY 1d ESCALATE 3650d"))[0], 0);
        let text: String = run(c, "GET lq");
        assert!(text.len() > 137 && text.contains("|penalty:"), "{text}");
        let peek = long.replace("RL.QUOTA lq", "RL.PEEK QUOTA lq");
        assert_eq!(rl(c, &peek)[..3], [0, 1_000_000_000_000, 0]);
        assert_eq!(rl(c, &format!("{peek} COST 0"))[..3], [1, 1_000_000_000_000, 0]);
        set_clock(c, 0);
    }

    fn writes_replicate_as_set_pxat(flavor) {
        let master = Server::start_master(flavor);
        let replica = master.replica(false);
        let (m, r) = (&mut master.conn(), &mut replica.conn());
        rl(m, "RL.QUOTA q1 5 MONTH TZ Europe/Paris ANCHOR 2001-01-15T00:00 COST 2");
        rl(m, "RL.QUOTA q2 5 DAY TZ +05:30");
        rl(m, "RL.QUOTA q3 1 WEEK TZ America/New_York");
        rl(m, "RL.QUOTA q3 1 WEEK TZ America/New_York PENALTY 1h");
        rl(m, "RL.QUOTA q2 5 DAY TZ +05:30 REFUND 1");
        let acked: i64 = run(m, "WAIT 1 5000");
        assert_eq!(acked, 1);
        for key in ["q1", "q2", "q3"] {
            let (a, b): (Option<String>, Option<String>) = (run(m, &format!("GET {key}")), run(r, &format!("GET {key}")));
            assert_eq!(a, b, "{key}");
            assert_eq!(pexpiretime(m, key), pexpiretime(r, key), "{key}");
        }
        assert_eq!(run::<i64>(r, "EXISTS q2"), 0, "the refund of every unit deleted the key");
        let q1: String = run(r, "GET q1");
        assert!(q1.ends_with(":2:MONTH 2001-01-15T00:00 Europe/Paris"), "{q1}");
    }
}
