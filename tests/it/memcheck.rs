//! The wait, lease, sliding-log and flood scenarios on Redis 7.0 under
//! valgrind's memcheck: no invalid read or write, no use of freed memory.
//! Slow (valgrind runs the server 20 to 50 times slower), so ignored by a
//! plain run; `make memcheck` runs it, and so does `make test` when valgrind
//! is installed.

use crate::common::scenarios::{
    every_end, flood, keys_expiring_during_counts, leases_lapsing_under_their_timers,
    legacy_logs_lapsing_under_their_timers,
};
use crate::common::*;

#[test]
#[ignore = "needs valgrind: make memcheck"]
fn the_wait_scenarios_make_no_invalid_memory_access_on_redis_7() {
    let s = Server::start_memcheck(Flavor::Redis, &[]);
    {
        let c = &mut s.conn();
        every_end(&s, c, 20);
        flood(&s, c, 2_000);
        leases_lapsing_under_their_timers(&s, c, 30, 4);
        legacy_logs_lapsing_under_their_timers(&s, c, 30, 3);
        // Keys expiring during the timers' counts, at will (see key_handles.rs),
        // with room for valgrind's slowness.
        let _: () = run(c, "RL.DEBUG CALLDELAY 100000");
        let vanished = keys_expiring_during_counts(&s, c, 5, 50);
        assert!(vanished > 0, "no key expired during a count");
    }
    let errors = s.memcheck_errors();
    assert!(errors.is_empty(), "valgrind found errors:\n{errors}");
}
