//! Chaos for `BLOCK`: seeded random steps interleave new waiters on several
//! limiters, every way a wait can end (its own deadline, admission, the
//! client leaving, `CLIENT KILL`, `CLIENT UNBLOCK` with and without `ERROR`)
//! and every generic key action (`DEL`, `UNLINK`, expiry, `RENAME`, `MOVE`,
//! flushes, `SWAPDB`, releases, refunds, plain spenders), with random pauses.
//! Afterwards: every client got a well-formed reply (or its connection was
//! closed), leases were admitted in arrival order, no limiter holds more than
//! its limit, a module-less replica holds byte-identical keys, and memory and
//! the waiting gauge are back at their baseline. `RL_CHAOS_SEED` and
//! `RL_CHAOS_STEPS` replay or lengthen a run.

use crate::common::raw::{memory_back_to, settled_memory, wait_for, waits, Raw, Reply};
use crate::common::scenarios::allow_waiters;
use crate::common::*;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// The limiters waited on: (key, the command after the key, its limit).
const LIMITERS: [(&str, &str, u64); 5] = [
    ("sem", "RL.ACQUIRE sem 3 1h", 3),
    ("fix", "RL.FIXED fix 4 1d", 4),
    ("log", "RL.SLIDINGLOG log 4 1h", 4),
    ("tb", "RL.TOKENBUCKET tb 3 1 1h", 3),
    ("fast", "RL.GCRA fast 200 1s", 1),
];

const ACTIONS: [&str; 10] = [
    "DEL {k}",
    "UNLINK {k}",
    "PEXPIRE {k} 1",
    "RENAME {k} {k}:moved",
    "MOVE {k} 1",
    "FLUSHDB",
    "FLUSHALL",
    "FLUSHALL ASYNC",
    "SWAPDB 0 1",
    "RL.FIXED fix 4 1d REFUND 1",
];

fn env(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

struct Chaos<'a> {
    s: &'a Server,
    rng: StdRng,
    /// Every waiter sent; `None` once its client is gone (it left or was killed).
    waiters: Vec<Option<Raw>>,
    /// Lease ids in the order their calls reached the server.
    seq: u64,
}

impl Chaos<'_> {
    /// The words of a call on limiter `i` (a lease id of its own for `RL.ACQUIRE`).
    fn call(&mut self, i: usize) -> String {
        self.seq += 1;
        match LIMITERS[i].1 {
            base if base.starts_with("RL.ACQUIRE") => format!("{base} {:06}", self.seq),
            base => base.to_string(),
        }
    }

    /// Sends a waiter and returns once it reached the server (it waits, or
    /// its reply is there), so that waiters arrive in the order sent.
    fn wait(&mut self, c: &mut redis::Connection) {
        let i = self.rng.random_range(0..LIMITERS.len());
        let block = [0, 0, 20, 200, 2000][self.rng.random_range(0..5)];
        let words = format!("{} BLOCK {block}", self.call(i));
        let mut raw = Raw::send(self.s, &words);
        // Arrived: the server blocked its client or answered it. (A sum of
        // the wait gauges cannot tell: another waiter's client leaving lowers
        // it in the same instant.)
        let id = raw.id;
        wait_for("the waiter to arrive", || {
            let line: String = run(c, &format!("CLIENT LIST ID {id}"));
            let blocked = line
                .split_whitespace()
                .find_map(|f| f.strip_prefix("flags="))
                .is_some_and(|flags| flags.contains('b'));
            blocked || raw.ready()
        });
        self.waiters.push(Some(raw));
    }

    /// Ends a random waiter's wait from outside (it may have ended already).
    fn end(&mut self, c: &mut redis::Connection) {
        let live: Vec<usize> = (0..self.waiters.len())
            .filter(|&i| self.waiters[i].is_some())
            .collect();
        if live.is_empty() {
            return;
        }
        let slot = &mut self.waiters[live[self.rng.random_range(0..live.len())]];
        let id = slot.as_ref().expect("a live waiter").id;
        match self.rng.random_range(0..4) {
            // The client leaves: its socket closes.
            0 => *slot = None,
            1 => {
                let _: i64 = run(c, &format!("CLIENT KILL ID {id}"));
                *slot = None;
            }
            2 => {
                let _: i64 = run(c, &format!("CLIENT UNBLOCK {id}"));
            }
            _ => {
                let _: i64 = run(c, &format!("CLIENT UNBLOCK {id} ERROR"));
            }
        }
    }

    fn step(&mut self, c: &mut redis::Connection) {
        match self.rng.random_range(0..10) {
            0..=3 => self.wait(c),
            4..=5 => self.end(c),
            6..=7 => {
                let k = LIMITERS[self.rng.random_range(0..LIMITERS.len())].0;
                let action = ACTIONS[self.rng.random_range(0..ACTIONS.len())].replace("{k}", k);
                let _ = command(&action).query::<Value>(c);
            }
            8 => {
                // A plain spender, or a release of the oldest lease held.
                let i = self.rng.random_range(0..LIMITERS.len());
                let words = self.call(i);
                let _ = command(&words).query::<Value>(c);
                let held: Vec<String> = run(c, "ZRANGE sem 0 0");
                if let Some(id) = held.first().and_then(|m| m.strip_prefix("lease:")) {
                    let _: i64 = run(c, &format!("RL.RELEASE sem {id}"));
                }
            }
            _ => std::thread::sleep(std::time::Duration::from_millis(
                self.rng.random_range(0..4),
            )),
        }
    }
}

/// A key's (type, value, expiry) on one server: what a replica must hold.
fn holding(c: &mut redis::Connection, key: &str) -> (String, Option<Vec<u8>>, i64) {
    let kind: String = run(c, &format!("TYPE {key}"));
    let value = match kind.as_str() {
        "string" => run(c, &format!("GET {key}")),
        "zset" => Some(run::<Vec<Vec<u8>>>(c, &format!("ZRANGE {key} 0 -1 WITHSCORES")).concat()),
        _ => None,
    };
    (kind, value, pexpiretime(c, key))
}

fn chaos_run(flavor: Flavor) {
    let seed = env("RL_CHAOS_SEED", rand::random::<u32>() as u64);
    let steps = env("RL_CHAOS_STEPS", 600);
    eprintln!("chaos: RL_CHAOS_SEED={seed} RL_CHAOS_STEPS={steps}");
    let master = Server::start_master(flavor);
    let replica = master.replica(false);
    let c = &mut master.conn();
    allow_waiters(c, 10_000);
    // A first round brings the server's pools to their resting size (it keeps
    // up to 8 idle temporary clients, two per blocked client while it waits);
    // the second is measured.
    round(&master, &replica, c, seed ^ 0x9e37, steps);
    let baseline = settled_memory(c);
    round(&master, &replica, c, seed, steps);
    // Room for the servers' own tables; a forgotten handle per 100 waits
    // would be far more (tests/it/wait_ends.rs measures each way of ending alone).
    let slack = 128 * 1024;
    let after = memory_back_to(c, baseline + slack);
    assert!(
        after <= baseline + slack,
        "seed {seed}: used_memory {baseline} -> {after}"
    );
    assert_eq!(waits(c).0, 0);
}

/// One chaos round of `steps` steps, then its checks; ends with no key left.
fn round(master: &Server, replica: &Server, c: &mut redis::Connection, seed: u64, steps: u64) {
    let mut chaos = Chaos {
        s: master,
        rng: StdRng::seed_from_u64(seed),
        waiters: Vec::new(),
        seq: 0,
    };
    for _ in 0..steps {
        chaos.step(c);
    }
    // End what still waits, then read every reply.
    for raw in chaos.waiters.iter().flatten() {
        let _: i64 = run(c, &format!("CLIENT UNBLOCK {}", raw.id));
    }
    for raw in chaos.waiters.iter_mut().flatten() {
        let reply = raw.read();
        let ok = match &reply {
            Reply::Integers(v) => v.len() == 5,
            Reply::Error(e) => e.starts_with("UNBLOCKED"),
            Reply::Closed | Reply::Status(_) => false,
        };
        assert!(ok, "seed {seed}: unexpected reply {reply:?}");
    }
    drop(chaos);
    wait_for("no waiter left", || waits(c).0 == 0);

    // Leases in arrival order: ids increase with arrival, and admissions
    // happen in that order (equal lapse scores sort by id).
    let held: Vec<String> = run(c, "ZRANGE sem 0 -1");
    let mut sorted = held.clone();
    sorted.sort();
    assert_eq!(held, sorted, "seed {seed}: leases out of arrival order");
    // Nothing beyond a limit.
    assert!(held.len() <= 3, "seed {seed}: {} leases held", held.len());
    let logged: u64 = run(
        c,
        &format!("ZCOUNT log ({} +inf", (now_ms() - 3_600_000) * 1000),
    );
    assert!(logged <= 4, "seed {seed}: {logged} log entries live");
    if let Some(state) = run::<Option<String>>(c, "GET fix") {
        let count: u64 = state.rsplit(':').next().unwrap().parse().unwrap();
        assert!(count <= 4, "seed {seed}: fixed window at {count}");
    }

    // The module-less replica holds what the master holds.
    let _: i64 = run(c, "WAIT 1 5000");
    let r = &mut replica.conn();
    for db in [0, 1] {
        let _: () = run(c, &format!("SELECT {db}"));
        let _: () = run(r, &format!("SELECT {db}"));
        let keys: Vec<String> = run(c, "KEYS *");
        for key in keys {
            let here = holding(c, &key);
            // Keys about to expire may differ by when each server notices; one
            // that expired while it was read (-2: gone by PEXPIRETIME) as well.
            if here.2 == -2 || (here.2 >= 0 && here.2 < now_ms() + 2_000) {
                continue;
            }
            assert_eq!(holding(r, &key), here, "seed {seed}: {key} in db {db}");
        }
    }
    let _: () = run(c, "SELECT 0");

    let _: () = run(c, "FLUSHALL");
    let _: i64 = run(c, "WAIT 1 5000");
}

server_tests! {
    fn random_waits_ends_and_key_actions_leave_order_limits_replicas_and_memory_intact(flavor) {
        chaos_run(flavor);
    }
}
