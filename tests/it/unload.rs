//! `MODULE UNLOAD rl` is refused, with a log line naming the way to upgrade, and
//! can never crash the server, even with calls to the module queued in a
//! transaction (which crashed Redis 7.0 and Valkey 9.1 after an unload).

use crate::common::*;

server_tests! {
    fn module_unload_is_refused_and_queued_calls_still_run(flavor) {
        let s = Server::start_with(flavor, &["--enable-module-command", "yes"]);
        let (a, b) = (&mut s.conn(), &mut s.conn());
        run::<String>(a, "MULTI");
        assert_eq!(run::<String>(a, "RL.GCRA k 10 1s"), "QUEUED");
        assert_eq!(
            rl_err(b, "MODULE UNLOAD rl"),
            "ERR Error unloading module: operation not possible."
        );
        let replies: Vec<Vec<i64>> = run(a, "EXEC");
        assert_eq!(replies, [vec![1, 1, 0, 0, 100]]);
        // Still loaded, still serving.
        let modules: Value = run(b, "MODULE LIST");
        assert!(format!("{modules:?}").contains("\"rl\""), "{modules:?}");
        assert_eq!(rl(b, "RL.FIXED f 5 1h")[..3], [1, 5, 4]);
        assert!(
            s.log().contains("rl: MODULE UNLOAD refused"),
            "{}",
            s.log()
        );
    }
}
