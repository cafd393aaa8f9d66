//! The tower tests' servers: a real `redis-server` or `valkey-server` on a free port, with the
//! module (`$RL_MODULE`, else the repository's `target/release/librl.so`) or without it (the
//! Functions library then), killed on drop; a three-master Redis Cluster; and an axum app
//! served on 127.0.0.1:0 with `ConnectInfo<SocketAddr>`.
#![allow(dead_code)]

use std::net::{SocketAddr, TcpListener};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

pub fn module_path() -> PathBuf {
    let path = std::env::var_os("RL_MODULE")
        .map(PathBuf::from)
        .unwrap_or_else(|| root().join("target/release/librl.so"));
    assert!(
        path.exists(),
        "no module at {path:?}: run `cargo build --release` at the repository's root, or set RL_MODULE"
    );
    path
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flavor {
    Redis,
    Valkey,
}

impl Flavor {
    pub fn binary(self) -> PathBuf {
        match self {
            Flavor::Redis => std::env::var_os("RL_REDIS_SERVER")
                .map(PathBuf::from)
                .unwrap_or_else(|| "redis-server".into()),
            Flavor::Valkey => std::env::var_os("RL_VALKEY_SERVER")
                .map(PathBuf::from)
                .unwrap_or_else(|| {
                    let local = root().join(".tools/bin/valkey-server");
                    if local.exists() {
                        local
                    } else {
                        "valkey-server".into()
                    }
                }),
        }
    }
}

pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("bind a free port")
        .port()
}

pub struct Server {
    pub port: u16,
    child: Child,
}

impl Server {
    /// A server of `flavor`, with the module loaded or not.
    pub fn start(flavor: Flavor, with_module: bool) -> Server {
        Self::start_with(flavor, with_module, &[])
    }

    pub fn start_with(flavor: Flavor, with_module: bool, extra: &[&str]) -> Server {
        for _ in 0..5 {
            let port = free_port();
            let mut command = Command::new(flavor.binary());
            command
                .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
                .args(["--save", "", "--appendonly", "no"])
                .args(extra);
            if with_module {
                command.arg("--loadmodule").arg(module_path());
            }
            let mut child = command
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap_or_else(|e| panic!("cannot start {:?}: {e}", flavor.binary()));
            let deadline = Instant::now() + Duration::from_secs(10);
            while Instant::now() < deadline {
                if let Ok(Some(_)) = child.try_wait() {
                    break;
                }
                if let Ok(mut c) = redis::Client::open(format!("redis://127.0.0.1:{port}/"))
                    .and_then(|c| c.get_connection())
                {
                    if redis::cmd("PING").query::<String>(&mut c).is_ok() {
                        return Server { port, child };
                    }
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            let _ = child.kill();
            let _ = child.wait();
        }
        panic!("{:?} did not start", flavor.binary());
    }

    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.port)
    }

    pub fn conn(&self) -> redis::Connection {
        redis::Client::open(self.url())
            .unwrap()
            .get_connection()
            .unwrap()
    }

    /// Stops the server (a server that is down: the layer's `fail_open` and 503).
    pub fn stop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop();
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
