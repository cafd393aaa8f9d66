//! No key handle outlives its key: a wait timer that counts entries through
//! the server (`ZCOUNT`, `ZRANGE` by rank) while the key's expiry passes must
//! decide on the key as it is then, never through a handle to freed memory.
//! (Outside a command Redis 7.0 does not freeze its clock, so the count itself
//! can expire the key.) `make memcheck` runs the same scenarios under valgrind.

use crate::common::scenarios::{
    flood, keys_expiring_during_counts, leases_lapsing_under_their_timers,
    legacy_logs_lapsing_under_their_timers,
};
use crate::common::*;

server_tests! {
    fn lease_waiters_are_all_admitted_while_their_keys_lapse(flavor) {
        let s = Server::start(flavor);
        leases_lapsing_under_their_timers(&s, &mut s.conn(), 200, 10);
    }

    fn legacy_sliding_log_waiters_are_all_admitted_while_their_keys_lapse(flavor) {
        let s = Server::start(flavor);
        legacy_logs_lapsing_under_their_timers(&s, &mut s.conn(), 200, 3);
    }

    fn keys_that_expire_during_a_count_are_decided_again_as_absent(flavor) {
        // The test build pauses 10 ms inside every server call about a key:
        // a timer's count of lapsed leases or legacy entries then outlives a
        // key that has 5 ms left. Redis 7.0 expires the key during the count;
        // Valkey keeps its clock still during a timer, and does not.
        let s = Server::start_debug(flavor);
        let c = &mut s.conn();
        let _: () = run(c, "RL.DEBUG CALLDELAY 10000");
        let vanished = keys_expiring_during_counts(&s, c, 10, 5);
        if flavor == Flavor::Redis {
            assert!(vanished > 0, "no key expired during a count");
        }
    }

    fn a_flood_with_waiters_leaves_the_server_answering(flavor) {
        let s = Server::start(flavor);
        let c = &mut s.conn();
        flood(&s, c, 5_000);
        assert_eq!(run::<String>(c, "PING"), "PONG");
    }
}
