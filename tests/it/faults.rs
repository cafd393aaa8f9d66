//! Fault injection through the test-only build (`--features debug-commands`):
//! a wall clock that steps backwards, and a panic inside a command.

use crate::common::*;

const ALL: [(&str, &str); 6] = [
    ("RL.GCRA", "5 1s BURST 3"),
    ("RL.TOKENBUCKET", "3 5 1s"),
    ("RL.LEAKY", "3 5 1s"),
    ("RL.SLIDING", "3 1s"),
    ("RL.SLIDINGLOG", "3 1s"),
    ("RL.FIXED", "3 1s"),
];

server_tests! {
    fn a_clock_stepping_back_grants_nothing_and_keeps_expiry(flavor) {
        let s = Server::start_debug(flavor);
        let c = &mut s.conn();
        for back_ms in [1, 700, 3_600_000, 10 * 86_400_000] {
            set_clock(c, 0);
            for (cmd, params) in ALL {
                let key = format!("{cmd}:{back_ms}");
                // Exhaust the limiter at the real time.
                assert_eq!(rl(c, &format!("{cmd} {key} {params} COST 3"))[..3], [1, 3, 0]);
                let expiry: i64 = run(c, &format!("PEXPIRETIME {key}"));
                let value: Vec<u8> = run(c, &format!("DUMP {key}"));
                // The clock jumps back: still exhausted, nothing written.
                set_clock(c, -back_ms);
                let r = rl(c, &format!("{cmd} {key} {params}"));
                assert_eq!(r[..3], [0, 3, 0], "{cmd} after stepping back {back_ms} ms");
                assert!(r[3] > 0, "{cmd}: a denial must say when to retry");
                assert_eq!(run::<Vec<u8>>(c, &format!("DUMP {key}")), value, "{cmd}");
                assert_eq!(run::<i64>(c, &format!("PEXPIRETIME {key}")), expiry, "{cmd}");
                set_clock(c, 0);
            }
        }
    }

    fn writes_after_a_step_back_never_shorten_the_expiry(flavor) {
        let s = Server::start_debug(flavor);
        let c = &mut s.conn();
        for (cmd, params) in ALL {
            let key = format!("{cmd}:partial");
            set_clock(c, 0);
            rl(c, &format!("{cmd} {key} {params}"));
            let before: i64 = run(c, &format!("PEXPIRETIME {key}"));
            // A tenth of a second back (half a unit): there is still room, so this call writes.
            set_clock(c, -100);
            let r = rl(c, &format!("{cmd} {key} {params}"));
            assert_eq!(r[0], 1, "{cmd}");
            let after: i64 = run(c, &format!("PEXPIRETIME {key}"));
            assert!(after >= before, "{cmd}: expiry moved from {before} back to {after}");
            // Back at the real time the two admitted units are still counted.
            set_clock(c, 0);
            assert_eq!(rl(c, &format!("{cmd} {key} {params} COST 0"))[2], 1, "{cmd}");
        }
    }

    fn a_panic_inside_a_command_is_an_error_and_the_server_stays_up(flavor) {
        let mut s = Server::start_debug(flavor);
        let c = &mut s.conn();
        rl(c, "RL.GCRA before 1 1h BURST 2");
        for _ in 0..3 {
            let err = rl_err(c, "RL.DEBUG PANIC");
            assert_eq!(err, "ERR internal error in RL.DEBUG: the request was not applied");
        }
        assert!(s.alive());
        let c = &mut s.conn();
        assert_eq!(rl(c, "RL.GCRA before 1 1h BURST 2")[..3], [1, 2, 0]);
    }
}
