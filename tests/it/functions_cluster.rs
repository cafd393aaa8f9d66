//! The Functions library in Redis Cluster: `FUNCTION LOAD` on every master
//! (replicas receive it by replication), `FCALL` routed by its key, state on the
//! master that owns the slot, `rl_all` over one `{hash tag}`, Redis's own
//! `CROSSSLOT` error across slots, and one key driven by both the library and
//! the module.

use crate::common::backend::library_source;
use crate::common::cluster::{call, Cluster};
use crate::common::{error_text, manifest_dir, Backend, Value};

/// A cluster with the library loaded as docs/managed-redis.md says: on every master
/// listed by `CLUSTER NODES`, `redis-cli -x FUNCTION LOAD REPLACE < functions/rl.lua` (the
/// file is past the 128 KiB a single command-line argument may hold, so it goes
/// through standard input; the block is run as written, on this cluster's first port).
fn cluster_with_library(flavor: crate::common::Flavor) -> Cluster {
    let cluster = Cluster::start(flavor);
    assert!(
        library_source().len() > 131_072,
        "the library fits one argument again: docs/managed-redis.md may say so"
    );
    let docs = std::fs::read_to_string(manifest_dir().join("docs/managed-redis.md")).unwrap();
    let block = docs
        .split("<!-- example: install library -->\n```sh\n")
        .nth(1)
        .and_then(|rest| rest.split("```").next())
        .expect("docs/managed-redis.md's install library block");
    let script = block.replace("7000", &cluster.ports()[0].to_string());
    // Only the cluster's lines: the first loads a module-less server on 6379.
    let script: String = script
        .lines()
        .skip_while(|l| !l.starts_with("# Redis Cluster"))
        .map(|l| format!("{l}\n"))
        .collect();
    assert!(script.contains("CLUSTER NODES"), "{block}");
    let out = std::process::Command::new("bash")
        .args(["-e", "-o", "pipefail", "-c", &script])
        .current_dir(manifest_dir())
        .output()
        .expect("run the docs' cluster load");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let loaded = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        loaded.lines().filter(|l| *l == "rl").count(),
        cluster.masters().len(),
        "{loaded}"
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
