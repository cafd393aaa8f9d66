//! Signals (CONTRACT.md section 8): a call that writes publishes exactly the
//! keyspace events its replicated effect publishes on a module-less replica,
//! aborts the `WATCH`es on its key and sends client-tracking invalidations; a
//! call that writes nothing does none of these.
//!
//! Each case runs on a master (test build, for `RL.DEBUG CLOCK`) with a
//! module-less replica, both with `notify-keyspace-events KEA`. Events are read
//! up to a sentinel write (`SET sentinel`), so no assertion waits on time.

use crate::common::*;

use std::time::Duration;

/// One case: setup calls (their events are discarded), the calls under test,
/// the keys a second connection `WATCH`es during them, and the keyspace events
/// expected on the master, as `event key` (`None`: compare with the replica only).
struct Case {
    setup: &'static [&'static str],
    calls: &'static [&'static str],
    watch: &'static [&'static str],
    events: Option<&'static [&'static str]>,
}

const fn case(
    setup: &'static [&'static str],
    calls: &'static [&'static str],
    watch: &'static [&'static str],
    events: &'static [&'static str],
) -> Case {
    Case {
        setup,
        calls,
        watch,
        events: Some(events),
    }
}

/// Calls that write nothing: no event, no `WATCH` abort, no invalidation.
const QUIET: &[Case] = &[
    // Denied.
    case(&["RL.GCRA q1 1 1h"], &["RL.GCRA q1 1 1h"], &["q1"], &[]),
    case(
        &["RL.SLIDINGLOG q2 1 1h"],
        &["RL.SLIDINGLOG q2 1 1h"],
        &["q2"],
        &[],
    ),
    // PEEK and COST 0, on an existing and on an absent key.
    case(
        &["RL.GCRA q3 5 1h BURST 3"],
        &[
            "RL.GCRA q3 5 1h BURST 3 PEEK",
            "RL.GCRA q3 5 1h BURST 3 COST 0",
        ],
        &["q3"],
        &[],
    ),
    case(
        &[],
        &[
            "RL.TOKENBUCKET q4 5 1 1h PEEK",
            "RL.FIXED q4 5 1h COST 0",
            "RL.SLIDINGLOG q4 5 1h COST 0",
        ],
        &["q4"],
        &[],
    ),
    // WRONGTYPE and foreign values.
    case(
        &["RPUSH q5 a"],
        &[
            "RL.GCRA q5 1 1h",
            "RL.SLIDINGLOG q5 1 1h",
            "RL.ACQUIRE q5 1 1h a",
        ],
        &["q5"],
        &[],
    ),
    case(
        &["SET q6 42"],
        &["RL.GCRA q6 1 1h", "RL.FIXED q6 1 1h PEEK"],
        &["q6"],
        &[],
    ),
    case(
        &["ZADD q7 1 alpha"],
        &[
            "RL.SLIDINGLOG q7 5 1h",
            "RL.ACQUIRE q7 5 1h a",
            "RL.RELEASE q7 a",
        ],
        &["q7"],
        &[],
    ),
    // RL.RELEASE of a lease that is not held, on a held set and on an absent key.
    case(
        &["RL.ACQUIRE q8 5 1h a"],
        &["RL.RELEASE q8 nope", "RL.RELEASE q8-absent a"],
        &["q8", "q8-absent"],
        &[],
    ),
    // An RL.ACQUIRE that is denied, and one with PEEK.
    case(
        &["RL.ACQUIRE q9 1 1h a"],
        &["RL.ACQUIRE q9 1 1h b", "RL.ACQUIRE q9 1 1h c PEEK"],
        &["q9"],
        &[],
    ),
    // CL.THROTTLE limited, and with quantity 0.
    case(
        &["CL.THROTTLE q10 0 1 3600"],
        &["CL.THROTTLE q10 0 1 3600", "CL.THROTTLE q10 0 1 3600 0"],
        &["q10"],
        &[],
    ),
    // RL.ALL denied by one layer: neither layer is written.
    case(
        &["RL.FIXED q11b 1 1h"],
        &["RL.ALL 2 q11a q11b FIXED 5 1h FIXED 1 1h"],
        &["q11a", "q11b"],
        &[],
    ),
    // RL.ALL with PEEK.
    case(
        &[],
        &["RL.ALL 2 q12a q12b FIXED 5 1h GCRA 1 1h PEEK"],
        &["q12a", "q12b"],
        &[],
    ),
    // A REFUND with nothing to give back.
    case(
        &[],
        &[
            "RL.GCRA q13 5 1h REFUND 1",
            "RL.SLIDINGLOG q13b 5 1h REFUND 1",
        ],
        &["q13", "q13b"],
        &[],
    ),
];

/// Calls that write: the events of their replicated effect.
const WRITES: &[Case] = &[
    // String states: SET … PXAT publishes `set` then `expire`.
    case(
        &[],
        &["RL.GCRA w1 5 1h BURST 3"],
        &["w1"],
        &["set w1", "expire w1"],
    ),
    case(
        &[],
        &["RL.TOKENBUCKET w2 5 1 1h"],
        &["w2"],
        &["set w2", "expire w2"],
    ),
    case(
        &[],
        &["RL.LEAKY w3 5 1 1h"],
        &["w3"],
        &["set w3", "expire w3"],
    ),
    case(
        &[],
        &["RL.SLIDING w4 5 1h"],
        &["w4"],
        &["set w4", "expire w4"],
    ),
    case(
        &[],
        &["RL.FIXED w5 5 1h"],
        &["w5"],
        &["set w5", "expire w5"],
    ),
    case(
        &[],
        &["CL.THROTTLE w6 5 1 3600"],
        &["w6"],
        &["set w6", "expire w6"],
    ),
    // A refund back to idle deletes the key: `del`.
    case(
        &["RL.GCRA w7 5 1h BURST 3"],
        &["RL.GCRA w7 5 1h BURST 3 REFUND 1"],
        &["w7"],
        &["del w7"],
    ),
    case(
        &["RL.FIXED w8 5 1h COST 2"],
        &["RL.FIXED w8 5 1h REFUND 2"],
        &["w8"],
        &["del w8"],
    ),
    // Sorted sets: `zadd` then `expire`; a partial refund rewrites the newest entry
    // (`zadd` of its new member, `zrem` of the old) then `expire`; a full one `del`.
    case(
        &[],
        &["RL.SLIDINGLOG w9 5 1h COST 2"],
        &["w9"],
        &["zadd w9", "expire w9"],
    ),
    case(
        &["RL.SLIDINGLOG w10 5 1h COST 3"],
        &["RL.SLIDINGLOG w10 5 1h REFUND 1"],
        &["w10"],
        &["zadd w10", "zrem w10", "expire w10"],
    ),
    case(
        &["RL.SLIDINGLOG w11 5 1h COST 3"],
        &["RL.SLIDINGLOG w11 5 1h REFUND 3"],
        &["w11"],
        &["del w11"],
    ),
    // Leases: acquire, renew (a new score), release one of two, release the last.
    case(
        &[],
        &["RL.ACQUIRE w12 5 1h a"],
        &["w12"],
        &["zadd w12", "expire w12"],
    ),
    case(
        &["RL.ACQUIRE w12b 5 1h a"],
        &["RL.ACQUIRE w12b 5 2h a"],
        &["w12b"],
        &["zadd w12b", "expire w12b"],
    ),
    case(
        &["RL.ACQUIRE w13 5 1h a", "RL.ACQUIRE w13 5 1h b"],
        &["RL.RELEASE w13 a"],
        &["w13"],
        &["zrem w13", "expire w13"],
    ),
    case(
        &["RL.ACQUIRE w14 5 1h a"],
        &["RL.RELEASE w14 a"],
        &["w14"],
        &["del w14"],
    ),
    // RL.ALL publishes each written layer's events, in order; a COST 0 layer
    // is not written, so its WATCH holds.
    case(
        &[],
        &["RL.ALL 2 w15a w15b GCRA 5 1h BURST 3 SLIDINGLOG 5 1h"],
        &["w15a", "w15b"],
        &["set w15a", "expire w15a", "zadd w15b", "expire w15b"],
    ),
    case(
        &[],
        &["RL.ALL 2 w16a w16b FIXED 5 1h FIXED 5 1h COST 0"],
        &["w16b"],
        &["set w16a", "expire w16a"],
    ),
];

/// Writes whose effect depends on entries that lapsed (the module's clock is
/// moved two hours ahead, so nothing expires for Redis meanwhile): compared
/// with the replica's events, event for event.
const LAPSED: &[Case] = &[
    // The lapsed entries go, then the new one is added.
    Case {
        setup: &["RL.SLIDINGLOG l1 5 1h COST 2", "RL.DEBUG CLOCK 7200000"],
        calls: &["RL.SLIDINGLOG l1 5 1h"],
        watch: &["l1"],
        events: None,
    },
    // Every lease lapsed: the set empties (`del`), then the new lease is added.
    Case {
        setup: &[
            "RL.ACQUIRE l2 5 1h a",
            "RL.ACQUIRE l2 5 1h b",
            "RL.DEBUG CLOCK 7200000",
        ],
        calls: &["RL.ACQUIRE l2 5 1h c"],
        watch: &["l2"],
        events: None,
    },
    // One lapsed lease goes with the released one; the third stays.
    Case {
        setup: &[
            "RL.ACQUIRE l3 5 1h a",
            "RL.DEBUG CLOCK 1800000",
            "RL.ACQUIRE l3 5 1h b",
            "RL.ACQUIRE l3 5 1h c",
            "RL.DEBUG CLOCK 3600001",
        ],
        calls: &["RL.RELEASE l3 b"],
        watch: &["l3"],
        events: None,
    },
];

/// What one case did: the master's and the replica's keyspace messages
/// (`channel payload`), the keys invalidated, and whether the `WATCH` aborted.
#[derive(Debug)]
struct Seen {
    master: Vec<String>,
    replica: Vec<String>,
    invalidated: Vec<String>,
    aborted: bool,
}

const SENTINEL: &str = "sentinel";

/// Reads keyspace messages up to the sentinel's `set` (the sentinel's own excluded).
fn events_until_sentinel(sub: &mut redis::PubSub) -> Vec<String> {
    let mut seen = Vec::new();
    loop {
        let msg = sub.get_message().expect("a keyspace message");
        let (channel, payload) = (
            msg.get_channel_name().to_string(),
            msg.get_payload::<String>().unwrap(),
        );
        if channel == "__keyevent@0__:set" && payload == SENTINEL {
            return seen;
        }
        if !channel.ends_with(SENTINEL) && payload != SENTINEL {
            seen.push(format!("{channel} {payload}"));
        }
    }
}

/// Reads invalidation messages up to the one naming the sentinel.
fn invalidated_until_sentinel(sub: &mut redis::PubSub) -> Vec<String> {
    let mut keys = Vec::new();
    loop {
        let msg = sub.get_message().expect("an invalidation message");
        let batch: Vec<String> = msg.get_payload().unwrap_or_default();
        let done = batch.iter().any(|k| k == SENTINEL);
        keys.extend(batch.into_iter().filter(|k| k != SENTINEL));
        if done {
            return keys;
        }
    }
}

/// The keyevent messages of a case as `event key`.
fn keyevents(messages: &[String]) -> Vec<String> {
    messages
        .iter()
        .filter_map(|m| m.strip_prefix("__keyevent@0__:"))
        .map(str::to_string)
        .collect()
}

fn send(c: &mut redis::Connection, words: &str) -> Value {
    command(words).query::<Value>(c).unwrap_or(Value::Nil)
}

/// Runs `cases` with `notify-keyspace-events KEA` on both servers, checking
/// everything: events, invalidations, `WATCH`.
fn check_cases(flavor: Flavor, cases: &[Case]) {
    check_cases_with(flavor, cases, "KEA");
}

/// Runs `cases` with `notify-keyspace-events` set to `classes` on both servers.
/// With `KEA` it checks everything; with other classes, that the master
/// publishes exactly what the replica publishes.
fn check_cases_with(flavor: Flavor, cases: &[Case], classes: &str) {
    let master = Server::start_debug(flavor);
    let m = &mut master.conn();
    run::<String>(m, "CONFIG SET repl-diskless-sync-delay 0");
    let replica = master.replica(false);
    for c in [&mut *m, &mut replica.conn()] {
        run::<String>(c, &format!("CONFIG SET notify-keyspace-events {classes}"));
    }
    let (mut w, mut t) = (master.conn(), master.conn());
    let (mut m_sub_conn, mut r_sub_conn, mut t_sub_conn) =
        (master.conn(), replica.conn(), master.conn());
    let redirect: i64 = run(&mut t_sub_conn, "CLIENT ID");
    run::<String>(
        &mut t,
        &format!("CLIENT TRACKING on REDIRECT {redirect} BCAST"),
    );
    let mut m_sub = m_sub_conn.as_pubsub();
    let mut r_sub = r_sub_conn.as_pubsub();
    let mut t_sub = t_sub_conn.as_pubsub();
    for sub in [&mut m_sub, &mut r_sub] {
        sub.psubscribe(&["__keyevent@0__:*", "__keyspace@0__:*"])
            .unwrap();
        sub.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    }
    t_sub.subscribe("__redis__:invalidate").unwrap();
    t_sub
        .set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();

    let mut flush = |m: &mut redis::Connection| -> (Vec<String>, Vec<String>, Vec<String>) {
        run::<String>(m, &format!("SET {SENTINEL} x"));
        assert_eq!(
            run::<i64>(m, "WAIT 1 10000"),
            1,
            "the replica did not acknowledge"
        );
        (
            events_until_sentinel(&mut m_sub),
            events_until_sentinel(&mut r_sub),
            invalidated_until_sentinel(&mut t_sub),
        )
    };
    for case in cases {
        for words in case.setup {
            send(m, words);
        }
        flush(m);
        run::<String>(&mut w, &format!("WATCH {}", case.watch.join(" ")));
        for words in case.calls {
            send(m, words);
        }
        run::<String>(&mut w, "MULTI");
        send(&mut w, "PING");
        let aborted = send(&mut w, "EXEC") == Value::Nil;
        let (master, replica, invalidated) = flush(m);
        let _ = run::<String>(m, "RL.DEBUG CLOCK 0");
        let seen = Seen {
            master,
            replica,
            invalidated,
            aborted,
        };
        let calls = case.calls.join("; ");
        println!("{calls}: {seen:?}");
        assert_eq!(
            seen.master, seen.replica,
            "{calls}: master and replica disagree: {seen:?}"
        );
        if classes != "KEA" {
            continue;
        }
        let events = keyevents(&seen.master);
        if let Some(expected) = case.events {
            assert_eq!(events, expected, "{calls}: {seen:?}");
        } else {
            assert!(events.len() >= 2, "{calls}: {seen:?}");
        }
        // Exactly the keys with events are invalidated, and a watched one aborts.
        let mut written: Vec<String> = events
            .iter()
            .map(|e| e.split(' ').nth(1).unwrap().to_string())
            .collect();
        written.dedup();
        let mut invalidated = seen.invalidated.clone();
        invalidated.dedup();
        assert_eq!(invalidated, written, "{calls}: {seen:?}");
        let watched_written = case.watch.iter().any(|k| written.iter().any(|w| w == k));
        assert_eq!(seen.aborted, watched_written, "{calls}: {seen:?}");
    }
}

server_tests! {
    fn calls_that_write_nothing_publish_signal_and_invalidate_nothing(flavor) {
        check_cases(flavor, QUIET);
    }

    fn writes_publish_their_replicated_effects_events_and_signal_their_keys(flavor) {
        check_cases(flavor, WRITES);
    }

    fn writes_that_drop_lapsed_entries_publish_what_the_replica_publishes(flavor) {
        check_cases(flavor, LAPSED);
    }

    fn events_come_in_the_same_classes_as_the_replicas(flavor) {
        // Without the generic class, then without the sorted-set class and with
        // new-key events (`E$` stays on: the sentinel is a `set`).
        for classes in ["E$z", "E$gn"] {
            for cases in [WRITES, LAPSED] {
                check_cases_with(flavor, cases, classes);
            }
        }
    }
}
