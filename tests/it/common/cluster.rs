//! A real Redis Cluster for tests: six nodes of one flavor (3 masters, 3 replicas)
//! with the module loaded, each on a free port whose cluster bus port (+10000) is free
//! too, in its own directory, joined by `redis-cli --cluster create`; killed and
//! cleaned up on drop.

use super::{free_port, module_path, spawn, Flavor};
use redis::cluster::{ClusterClient, ClusterConnection};
use std::collections::BTreeMap;
use std::ffi::OsString;
use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

const NODES: usize = 6;

pub struct Node {
    pub port: u16,
    pub dir: PathBuf,
    child: Child,
}

pub struct Cluster {
    pub flavor: Flavor,
    pub nodes: Vec<Node>,
    root: PathBuf,
}

/// One node's view of the cluster (from `CLUSTER NODES`): for each node's port, the
/// port of its master (`None` for a master) and the slot ranges it serves.
pub type View = BTreeMap<u16, (Option<u16>, Vec<(u16, u16)>)>;

impl Cluster {
    pub fn start(flavor: Flavor) -> Cluster {
        static SEQ: AtomicU32 = AtomicU32::new(0);
        let seq = SEQ.fetch_add(1, Ordering::Relaxed);
        let root = std::env::temp_dir().join(format!("rl-cluster-{}-{seq}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let mut cluster = Cluster {
            flavor,
            nodes: Vec::new(),
            root,
        };
        for i in 0..NODES {
            let node = cluster.start_node(i);
            cluster.nodes.push(node);
        }
        let out = Command::new("redis-cli")
            .arg("--cluster")
            .arg("create")
            .args(cluster.ports().iter().map(|p| format!("127.0.0.1:{p}")))
            .args(["--cluster-replicas", "1", "--cluster-yes"])
            .output()
            .expect("run redis-cli --cluster create");
        assert!(
            out.status.success(),
            "redis-cli --cluster create failed:\n{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        cluster.wait_settled(Duration::from_secs(30));
        let pairs = cluster.pairs();
        assert_eq!(pairs.len(), NODES / 2, "masters and replicas: {pairs:?}");
        cluster
    }

    fn start_node(&self, i: usize) -> Node {
        let dir = self.root.join(i.to_string());
        std::fs::create_dir_all(&dir).expect("create node dir");
        let mut args: Vec<OsString> = [
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
            "--cluster-enabled",
            "yes",
            "--cluster-config-file",
            "nodes.conf",
            "--cluster-node-timeout",
            "2000",
            // A replica's first sync starts at once, not after the default 5 s.
            "--repl-diskless-sync-delay",
            "0",
        ]
        .iter()
        .map(Into::into)
        .collect();
        args.extend(["--dir".into(), dir.clone().into_os_string()]);
        args.extend(["--logfile".into(), dir.join("server.log").into_os_string()]);
        args.extend([
            "--loadmodule".into(),
            module_path().clone().into_os_string(),
        ]);
        // Each node's policy file, empty at first, in its folder (the server's
        // working directory: `--dir`).
        std::fs::write(dir.join("policies.conf"), "").expect("create the policy file");
        args.extend(["--rl.policy-file".into(), "policies.conf".into()]);
        for _attempt in 0..20 {
            let port = free_port();
            let bus_free = port
                .checked_add(10000)
                .is_some_and(|bus| TcpListener::bind(("127.0.0.1", bus)).is_ok());
            if !bus_free {
                continue;
            }
            // `None` when a port was taken meanwhile: try others.
            if let Some(child) = spawn(self.flavor, port, &args, &[]) {
                return Node { port, dir, child };
            }
        }
        panic!(
            "{:?} cluster node did not start; log: {}",
            self.flavor,
            std::fs::read_to_string(dir.join("server.log")).unwrap_or_default()
        );
    }

    /// Every node's port, in creation order (the first three start as masters).
    pub fn ports(&self) -> Vec<u16> {
        self.nodes.iter().map(|n| n.port).collect()
    }

    /// A cluster-aware client: routes each command by its key, follows redirections.
    pub fn client(&self) -> ClusterConnection {
        let urls: Vec<String> = self.ports().iter().map(|p| url(*p)).collect();
        ClusterClient::new(urls)
            .and_then(|c| c.get_connection())
            .expect("connect to the cluster")
    }

    /// A plain connection to one node (no redirections followed).
    pub fn conn(&self, port: u16) -> redis::Connection {
        redis::Client::open(url(port))
            .and_then(|c| c.get_connection())
            .unwrap_or_else(|e| panic!("connect to node {port}: {e}"))
    }

    /// `INFO <section>` of one node as `field -> value`.
    pub fn info(&self, port: u16, section: &str) -> BTreeMap<String, String> {
        let text: String = call(&mut self.conn(port), &format!("INFO {section}"));
        text.lines()
            .filter_map(|l| l.split_once(':'))
            .map(|(k, v)| (k.to_string(), v.trim().to_string()))
            .collect()
    }

    /// The port of the node's master, as the node itself reports it; `None` for a master.
    pub fn master_port(&self, port: u16) -> Option<u16> {
        let info = self.info(port, "replication");
        match info.get("role").map(String::as_str) {
            Some("master") => None,
            _ => Some(info["master_port"].parse().expect("master_port")),
        }
    }

    /// `(master port, replica port)` for each replica, as the nodes report it now, sorted.
    pub fn pairs(&self) -> Vec<(u16, u16)> {
        let mut pairs: Vec<(u16, u16)> = self
            .ports()
            .into_iter()
            .filter_map(|p| self.master_port(p).map(|m| (m, p)))
            .collect();
        pairs.sort();
        pairs
    }

    /// The ports of the current masters, sorted.
    pub fn masters(&self) -> Vec<u16> {
        self.pairs().into_iter().map(|(m, _)| m).collect()
    }

    /// One node's view of the cluster, parsed from `CLUSTER NODES`.
    pub fn view(&self, port: u16) -> View {
        let text: String = call(&mut self.conn(port), "CLUSTER NODES");
        let lines: Vec<Vec<&str>> = text
            .lines()
            .map(|l| l.split_whitespace().collect())
            .filter(|f: &Vec<&str>| f.len() >= 8)
            .collect();
        // `ip:port@cport[,hostname]`
        let port_of = |addr: &str| -> u16 {
            let hostport = addr.split('@').next().unwrap_or_default();
            let port = hostport.rsplit(':').next().unwrap_or_default();
            port.parse().unwrap_or(0)
        };
        let ids: BTreeMap<&str, u16> = lines.iter().map(|f| (f[0], port_of(f[1]))).collect();
        lines
            .iter()
            .map(|f| {
                let master = ids.get(f[3]).copied();
                let slots = f[8..]
                    .iter()
                    .filter(|s| !s.starts_with('['))
                    .map(|s| {
                        let (a, b) = s.split_once('-').unwrap_or((s, s));
                        (a.parse().expect("slot"), b.parse().expect("slot"))
                    })
                    .collect();
                (port_of(f[1]), (master, slots))
            })
            .collect()
    }

    /// The hash slot of a key, by `CLUSTER KEYSLOT`.
    pub fn keyslot(&self, key: &str) -> u16 {
        let mut c = self.conn(self.nodes[0].port);
        redis::cmd("CLUSTER")
            .arg("KEYSLOT")
            .arg(key)
            .query(&mut c)
            .expect("CLUSTER KEYSLOT")
    }

    /// The port of the master that serves a key's slot (in the first node's view).
    pub fn master_of(&self, key: &str) -> u16 {
        let slot = self.keyslot(key);
        self.view(self.nodes[0].port)
            .into_iter()
            .find(|(_, (_, ranges))| ranges.iter().any(|&(a, b)| a <= slot && slot <= b))
            .map(|(port, _)| port)
            .unwrap_or_else(|| panic!("no master serves slot {slot} of {key}"))
    }

    /// Why the cluster is not settled yet, or `None` when it is: every node says
    /// `cluster_state:ok`, every replica's link to its master is up, and every node's
    /// view (`CLUSTER NODES`) agrees with the roles the nodes report themselves.
    fn unsettled(&self) -> Option<String> {
        let truth: BTreeMap<u16, Option<u16>> = self
            .ports()
            .into_iter()
            .map(|p| (p, self.master_port(p)))
            .collect();
        let mut first_view: Option<View> = None;
        for port in self.ports() {
            let state: String = call(&mut self.conn(port), "CLUSTER INFO");
            if !state.contains("cluster_state:ok") {
                return Some(format!("node {port}: cluster state is not ok"));
            }
            let link = self
                .info(port, "replication")
                .get("master_link_status")
                .cloned();
            if truth[&port].is_some() && link.as_deref() != Some("up") {
                return Some(format!("node {port}: master link is {link:?}"));
            }
            let view = self.view(port);
            let roles: BTreeMap<u16, Option<u16>> =
                view.iter().map(|(p, (m, _))| (*p, *m)).collect();
            if roles != truth {
                return Some(format!("node {port} sees roles {roles:?}, not {truth:?}"));
            }
            match &first_view {
                Some(first) if *first != view => {
                    return Some(format!("node {port} sees {view:?}, not {first:?}"))
                }
                _ => first_view = Some(view),
            }
        }
        None
    }

    /// Waits until the cluster is settled (see `unsettled`); panics after `timeout`.
    pub fn wait_settled(&self, timeout: Duration) {
        let deadline = Instant::now() + timeout;
        loop {
            match self.unsettled() {
                None => return,
                Some(why) if Instant::now() > deadline => {
                    panic!(
                        "{:?} cluster not settled after {timeout:?}: {why}",
                        self.flavor
                    )
                }
                Some(_) => std::thread::sleep(Duration::from_millis(50)),
            }
        }
    }

    /// One node's log.
    pub fn log(&self, port: u16) -> String {
        let node = self.nodes.iter().find(|n| n.port == port).expect("node");
        std::fs::read_to_string(node.dir.join("server.log")).unwrap_or_default()
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        for node in &mut self.nodes {
            let _ = node.child.kill();
        }
        for node in &mut self.nodes {
            let _ = node.child.wait();
        }
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

fn url(port: u16) -> String {
    format!("redis://127.0.0.1:{port}/")
}

/// Runs a command given as words on any connection (a node or the cluster client).
pub fn call<T: redis::FromRedisValue>(c: &mut impl redis::ConnectionLike, words: &str) -> T {
    let v: Vec<&str> = words.split_whitespace().collect();
    let mut cmd = redis::cmd(v[0]);
    cmd.arg(&v[1..]);
    cmd.query(c).unwrap_or_else(|e| panic!("{words}: {e}"))
}

/// Polls `done` every 20 ms until it returns true; panics with `what` after `timeout`.
pub fn wait_until(timeout: Duration, what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + timeout;
    while !done() {
        assert!(
            Instant::now() < deadline,
            "timed out after {timeout:?}: {what}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}
