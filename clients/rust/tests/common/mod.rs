//! Real servers for the tests: redis-server (Debian's 7.0 on PATH) with the rl module
//! (`RL_MODULE`, default the checkout's target/release/librl.so) or without it, valkey-server
//! (`RL_VALKEY_SERVER`, default the checkout's .tools/bin/valkey-server, else the one on PATH),
//! and a Redis Cluster of three masters. Each is started on free ports in a directory of its
//! own and killed when dropped. And for the tower layer's tests, an axum app served on
//! 127.0.0.1:0 with `ConnectInfo<SocketAddr>`.
#![allow(dead_code)]

use std::net::{SocketAddr, TcpListener};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

pub fn module_path() -> PathBuf {
    std::env::var_os("RL_MODULE")
        .map(PathBuf::from)
        .unwrap_or_else(|| root().join("target/release/librl.so"))
}

fn valkey_path() -> PathBuf {
    std::env::var_os("RL_VALKEY_SERVER")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            let local = root().join(".tools/bin/valkey-server");
            if local.exists() {
                local
            } else {
                "valkey-server".into()
            }
        })
}

/// A free port whose cluster bus port (+10000) is free too.
fn free_port() -> u16 {
    loop {
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        if port < 55_000 && TcpListener::bind(("127.0.0.1", port + 10_000)).is_ok() {
            return port;
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// redis-server with the module.
    Module,
    /// redis-server without it: the Functions library.
    Library,
    /// valkey-server with the module.
    ValkeyModule,
    /// valkey-server without it.
    ValkeyLibrary,
}

pub struct Server {
    child: Child,
    pub port: u16,
    dir: tempdir::Dir,
}

mod tempdir {
    use std::path::PathBuf;
    pub struct Dir(pub PathBuf);
    impl Dir {
        pub fn new() -> Dir {
            use std::sync::atomic::{AtomicU32, Ordering};
            static N: AtomicU32 = AtomicU32::new(0);
            let p = std::env::temp_dir().join(format!(
                "redis-rl-test-{}-{}",
                std::process::id(),
                N.fetch_add(1, Ordering::Relaxed)
            ));
            std::fs::create_dir_all(&p).unwrap();
            Dir(p)
        }
    }
    impl Drop for Dir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

impl Server {
    pub fn start(kind: Kind) -> Server {
        Server::start_with(kind, &[])
    }

    /// Started on a free port: again on another where the port was taken meanwhile (the
    /// server exited, and another process answered there).
    pub fn start_with(kind: Kind, extra: &[&str]) -> Server {
        for _ in 0..5 {
            let mut server = Server::spawn(kind, extra);
            server.wait_ready();
            std::thread::sleep(Duration::from_millis(30));
            if server.child.try_wait().unwrap().is_none() {
                return server;
            }
        }
        panic!("no server of {kind:?} could start");
    }

    fn spawn(kind: Kind, extra: &[&str]) -> Server {
        let port = free_port();
        let dir = tempdir::Dir::new();
        let binary = match kind {
            Kind::Module | Kind::Library => PathBuf::from("redis-server"),
            Kind::ValkeyModule | Kind::ValkeyLibrary => valkey_path(),
        };
        let mut cmd = Command::new(&binary);
        cmd.args([
            "--port",
            &port.to_string(),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
        ])
        .arg("--dir")
        .arg(&dir.0)
        .args(extra)
        .stdout(Stdio::null())
        .stderr(Stdio::null());
        if matches!(kind, Kind::Module | Kind::ValkeyModule) {
            let module = module_path();
            assert!(
                module.is_file(),
                "no module at {} (set RL_MODULE)",
                module.display()
            );
            cmd.arg("--loadmodule").arg(module);
        }
        let child = cmd
            .spawn()
            .unwrap_or_else(|e| panic!("{}: {e}", binary.display()));
        let server = Server { child, port, dir };
        server.wait_ready();
        server
    }

    fn wait_ready(&self) {
        let deadline = Instant::now() + Duration::from_secs(20);
        while Instant::now() < deadline {
            let ok = Command::new("redis-cli")
                .args(["-p", &self.port.to_string(), "ping"])
                .output()
                .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "PONG");
            if ok {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        panic!("server on port {} did not start", self.port);
    }

    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.port)
    }

    pub fn cli(&self, args: &[&str]) -> String {
        let out = Command::new("redis-cli")
            .args(["-p", &self.port.to_string()])
            .args(args)
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// A synchronous connection (for the test's own commands).
    pub fn conn(&self) -> redis::Connection {
        redis::Client::open(self.url())
            .unwrap()
            .get_connection()
            .unwrap()
    }

    pub async fn multiplexed(&self) -> redis::aio::MultiplexedConnection {
        redis::Client::open(self.url())
            .unwrap()
            .get_multiplexed_async_connection()
            .await
            .unwrap()
    }

    pub async fn manager(&self) -> redis::aio::ConnectionManager {
        redis::Client::open(self.url())
            .unwrap()
            .get_connection_manager()
            .await
            .unwrap()
    }

    /// `FUNCTION LOAD` calls this server answered (INFO commandstats).
    pub fn function_loads(&self) -> u64 {
        let stats = self.cli(&["info", "commandstats"]);
        stats
            .lines()
            .find(|l| l.starts_with("cmdstat_function|load:"))
            .and_then(|l| l.split("calls=").nth(1))
            .and_then(|s| s.split(',').next())
            .map_or(0, |n| n.parse().unwrap())
    }

    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.kill();
    }
}

/// A Redis Cluster of three masters (no replicas), with or without the module.
pub struct Cluster {
    pub nodes: Vec<Server>,
}

impl Cluster {
    pub fn start(with_module: bool) -> Cluster {
        let kind = if with_module {
            Kind::Module
        } else {
            Kind::Library
        };
        let nodes: Vec<Server> = (0..3)
            .map(|_| {
                Server::start_with(
                    kind,
                    &[
                        "--cluster-enabled",
                        "yes",
                        "--cluster-config-file",
                        "nodes.conf",
                        "--cluster-node-timeout",
                        "5000",
                    ],
                )
            })
            .collect();
        let addrs: Vec<String> = nodes
            .iter()
            .map(|n| format!("127.0.0.1:{}", n.port))
            .collect();
        let out = Command::new("redis-cli")
            .args(["--cluster", "create"])
            .args(&addrs)
            .args(["--cluster-replicas", "0", "--cluster-yes"])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "cluster create: {}",
            String::from_utf8_lossy(&out.stdout)
        );
        let deadline = Instant::now() + Duration::from_secs(30);
        for n in &nodes {
            while !n.cli(&["cluster", "info"]).contains("cluster_state:ok") {
                assert!(Instant::now() < deadline, "cluster not ok");
                std::thread::sleep(Duration::from_millis(50));
            }
        }
        Cluster { nodes }
    }

    pub async fn connection(&self) -> redis::cluster_async::ClusterConnection {
        let urls: Vec<String> = self.nodes.iter().map(Server::url).collect();
        redis::cluster::ClusterClient::new(urls)
            .unwrap()
            .get_async_connection()
            .await
            .unwrap()
    }
}

/// Serves `app` on 127.0.0.1:0 with `ConnectInfo<SocketAddr>`, in the test's runtime: the
/// base URL.
pub async fn serve(app: axum::Router) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        axum::serve(
            listener,
            app.into_make_service_with_connect_info::<SocketAddr>(),
        )
        .await
        .unwrap();
    });
    format!("http://{addr}")
}

/// The server's clock, in nanoseconds since the epoch (`TIME`, microseconds).
pub fn server_time_ns(c: &mut redis::Connection) -> i128 {
    let (s, us): (i64, i64) = redis::cmd("TIME").query(c).unwrap();
    i128::from(s) * 1_000_000_000 + i128::from(us) * 1_000
}
