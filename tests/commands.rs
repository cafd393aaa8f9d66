//! Every command's reply and stored state against a real server.

mod common;
use common::*;

server_tests! {
    fn gcra_smoke(flavor) {
        let s = Server::start(flavor);
        let mut c = s.conn();
        assert_eq!(rl(&mut c, "RL.GCRA user:42 1 1h BURST 5"), vec![1, 5, 4, 0, 3_600_000]);
    }
}
