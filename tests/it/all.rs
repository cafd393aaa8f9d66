//! RL.ALL: several layers decided as one; nothing is spent unless all admit.
//! More replies and the errors are test vectors (`tests/vectors/all.txt`).

use crate::common::*;

/// The seed article's three layers: per IP, per API key, per endpoint, with
/// rates slow enough (a unit an hour or more) that nothing refills while the
/// test runs on a loaded machine, and a day-long window that starts anew
/// only at midnight: its counts are exact.
const LAYERS: &str =
    "RL.ALL 3 ip:1 key:a ep:a:search GCRA 100 1h BURST 20 TOKENBUCKET 60 60 1h FIXED 2 1d";

/// Runs RL.ALL and splits its reply into the binding five and every layer's five.
fn all(c: &mut redis::Connection, words: &str) -> (Vec<i64>, Vec<Vec<i64>>) {
    let v: Vec<&str> = words.split_whitespace().collect();
    let reply: Vec<Value> = redis::cmd(v[0])
        .arg(&v[1..])
        .query(c)
        .unwrap_or_else(|e| panic!("{words}: {e}"));
    assert_eq!(reply.len(), 6, "{reply:?}");
    let ints: Vec<i64> = reply[..5]
        .iter()
        .map(|x| redis::from_redis_value(x.clone()).unwrap())
        .collect();
    let layers: Vec<Vec<i64>> = redis::from_redis_value(reply[5].clone()).unwrap();
    (ints, layers)
}

fn dump(c: &mut redis::Connection, key: &str) -> Option<Vec<u8>> {
    run(c, &format!("DUMP {key}"))
}

fn all_and_nothing(flavor: Flavor) {
    let s = Server::start(flavor);
    let c = &mut s.conn();
    // Two requests pass all three layers; the binding layer is the endpoint's (least remaining).
    let (first, layers) = all(c, LAYERS);
    assert_eq!(first, layers[2]);
    assert_eq!(first[..3], [1, 2, 1]);
    assert_eq!(layers[0][..3], [1, 20, 19]);
    assert_eq!(layers[1][..3], [1, 60, 59]);
    let (second, _) = all(c, LAYERS);
    assert_eq!(second[..3], [1, 2, 0]);
    // The third is denied by the endpoint layer: nothing is spent from the others.
    let before: Vec<_> = ["ip:1", "key:a", "ep:a:search"]
        .iter()
        .map(|k| dump(c, k))
        .collect();
    let (denied, layers) = all(c, LAYERS);
    assert_eq!(denied, layers[2]);
    assert_eq!(denied[..3], [0, 2, 0]);
    assert!(denied[3] > 0);
    // The admitting layers report their state as it is, unspent.
    assert_eq!(layers[0][..4], [1, 20, 18, 0]);
    assert_eq!(layers[1][..4], [1, 60, 58, 0]);
    let after: Vec<_> = ["ip:1", "key:a", "ep:a:search"]
        .iter()
        .map(|k| dump(c, k))
        .collect();
    assert_eq!(before, after);
    // Another endpoint of the same API key still works, and does spend the key's layer.
    let other = LAYERS.replace("ep:a:search", "ep:a:export");
    assert_eq!(all(c, &other).0[..3], [1, 2, 1]);
    assert_eq!(rl(c, "RL.TOKENBUCKET key:a 60 60 1h COST 0")[2], 57);
}

fn binding_layer_on_denial_waits_longest(flavor: Flavor) {
    let s = Server::start(flavor);
    let c = &mut s.conn();
    rl(c, "RL.FIXED short 1 1s");
    rl(c, "RL.FIXED long 1 1h");
    let (binding, layers) = all(
        c,
        "RL.ALL 3 short long free FIXED 1 1s FIXED 1 1h FIXED 5 1h",
    );
    assert_eq!(
        layers.iter().map(|l| l[0]).collect::<Vec<_>>(),
        vec![0, 0, 1]
    );
    assert_eq!(
        binding, layers[1],
        "the hour window makes the client wait longest"
    );
    // A cost above a layer's limit can never pass: that layer binds.
    let (binding, layers) = all(c, "RL.ALL 2 long huge FIXED 1 1h FIXED 3 1s COST 4");
    assert_eq!(binding, layers[1]);
    assert_eq!(binding[3], -1);
}

fn getkeys(flavor: Flavor) {
    let s = Server::start(flavor);
    let c = &mut s.conn();
    let keys: Vec<String> = run(c, &format!("COMMAND GETKEYS {LAYERS}"));
    assert_eq!(keys, ["ip:1", "key:a", "ep:a:search"]);
    // A numkeys that is not a number: the library's FCALL refuses it itself
    // (Redis's error), so this one is the module's alone.
    assert_eq!(
        rl_err(c, "RL.ALL x a FIXED 1 1s"),
        "ERR numkeys must be an integer from 1 to 64"
    );
}

fn several_limits_per_client_with_hash_tags(flavor: Flavor) {
    let s = Server::start(flavor);
    let c = &mut s.conn();
    // Like Bucket4j's bandwidths: 3 per second and 5 per hour for one user.
    let cmd = "RL.ALL 2 {u42}:sec {u42}:hour GCRA 3 1s BURST 3 FIXED 5 1h";
    let admitted: i64 = (0..10).map(|_| all(c, cmd).0[0]).sum();
    assert_eq!(admitted, 3, "the per-second layer binds first");
    std::thread::sleep(std::time::Duration::from_millis(1_100));
    let admitted: i64 = (0..10).map(|_| all(c, cmd).0[0]).sum();
    assert_eq!(admitted, 2, "then the hourly layer: 5 in all");
    assert_eq!(rl(c, "RL.FIXED {u42}:hour 5 1h COST 0")[2], 0);
}

fn replicates_effects(flavor: Flavor) {
    let master = Server::start_master(flavor);
    let replica = master.replica(false);
    let c = &mut master.conn();
    let r = &mut replica.conn();
    for i in 0..5 {
        all(
            c,
            &format!("RL.ALL 2 s{i} l{i} SLIDING 3 1h SLIDINGLOG 3 1h COST 2"),
        );
        all(
            c,
            &format!("RL.ALL 2 s{i} l{i} SLIDING 3 1h SLIDINGLOG 3 1h COST 2"),
        );
    }
    assert_eq!(run::<i64>(c, "WAIT 1 5000"), 1);
    for i in 0..5 {
        for (key, read) in [(format!("s{i}"), "GET"), (format!("l{i}"), "ZRANGE")] {
            let cmd = if read == "GET" {
                format!("GET {key}")
            } else {
                format!("ZRANGE {key} 0 -1 WITHSCORES")
            };
            assert_eq!(run::<Value>(c, &cmd), run::<Value>(r, &cmd), "{key}");
            let expiry = format!("PEXPIRETIME {key}");
            assert_eq!(run::<i64>(c, &expiry), run::<i64>(r, &expiry), "{key}");
        }
    }
}

server_tests! {
    fn all_layers_or_nothing(flavor) { super::all_and_nothing(flavor) }
    fn the_binding_layer_on_denial_waits_longest(flavor) { super::binding_layer_on_denial_waits_longest(flavor) }
    fn getkeys_returns_the_keys_and_numkeys_must_be_a_number(flavor) { super::getkeys(flavor) }
    fn several_limits_per_client(flavor) { super::several_limits_per_client_with_hash_tags(flavor) }
    fn writes_replicate_as_effects(flavor) { super::replicates_effects(flavor) }
}
