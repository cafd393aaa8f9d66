//! The Functions library in Redis Cluster: `FUNCTION LOAD` on every master
//! (replicas receive it by replication), `FCALL` routed by its key, state on the
//! master that owns the slot, `rl_all` over one `{hash tag}`, Redis's own
//! `CROSSSLOT` error across slots, and one key driven by both the library and
//! the module.

use crate::common::backend::library_source;
use crate::common::cluster::{call, Cluster};
use crate::common::{error_text, Backend, Value};

/// A cluster with the library loaded as docs/managed-redis.md says: `redis-cli --cluster call
/// <node> FUNCTION LOAD REPLACE "$(cat functions/rl.lua)" --cluster-only-masters`.
fn cluster_with_library(flavor: crate::common::Flavor) -> Cluster {
    let cluster = Cluster::start(flavor);
    let out = std::process::Command::new("redis-cli")
        .args([
            "--cluster",
            "call",
            &format!("127.0.0.1:{}", cluster.ports()[0]),
        ])
        .args([
            "FUNCTION",
            "LOAD",
            "REPLACE",
            &library_source(),
            "--cluster-only-masters",
        ])
        .output()
        .expect("run redis-cli --cluster call");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for port in cluster.masters() {
        let libraries: Value = call(&mut cluster.conn(port), "FUNCTION LIST LIBRARYNAME rl");
        assert!(
            matches!(&libraries, Value::Array(l) if l.len() == 1),
            "{port}: {libraries:?}"
        );
    }
    cluster
}

server_tests! {
    fn the_library_routes_by_key_and_keeps_tagged_limiters_together(flavor) {
        let cluster = cluster_with_library(flavor);
        let c = &mut cluster.client();
        for (i, key) in ["{u1}:sec", "{u2}:sec", "{u3}:sec", "alpha", "beta", "gamma"].iter().enumerate() {
            let words = format!("FCALL rl_gcra 1 {key} 1 1h BURST 2");
            assert_eq!(call::<Vec<i64>>(c, &words)[..3], [1, 2, 1], "{key}");
            assert_eq!(call::<Vec<i64>>(c, &words)[..3], [1, 2, 0], "{key}");
            assert_eq!(call::<Vec<i64>>(c, &words)[..3], [0, 2, 0], "{key}");
            // The state lives on the master that owns the key's slot.
            let owner = cluster.master_of(key);
            let stored: String = call(&mut cluster.conn(owner), &format!("GET {key}"));
            assert!(stored.starts_with("gcra:"), "{i}: {stored}");
        }
        // Two limits of one client, decided as one on one master.
        let all = "FCALL rl_all 2 {u42}:sec {u42}:hour GCRA 10 1s BURST 10 FIXED 1000 1h";
        let reply: Value = call(c, all);
        let Value::Array(items) = reply else { panic!("{reply:?}") };
        assert_eq!(items.len(), 6);
        // Keys in different slots: Redis's own CROSSSLOT error, before the library runs.
        let cross = redis::cmd("FCALL")
            .arg(&["rl_all", "2", "{a}x", "{b}y", "GCRA", "1", "1h", "GCRA", "1", "1h"][..])
            .query::<Value>(c)
            .map_err(|e| error_text(&e));
        assert!(matches!(&cross, Err(e) if e.starts_with("CROSSSLOT")), "{cross:?}");
        // One key, driven alternately by the module and the library.
        for (j, backend) in [Backend::Library, Backend::Module, Backend::Library, Backend::Module]
            .into_iter()
            .enumerate()
        {
            let r = backend.cmd("RL.FIXED {mix}:k 3 3650d").query::<Vec<i64>>(c).unwrap();
            assert_eq!(r[..3], [i64::from(j < 3), 3, (2 - j as i64).max(0)], "{backend:?}");
        }
    }
}
