//! Test harness: a real `redis-server` or `valkey-server` with the module loaded,
//! on a free port, in its own directory, killed and cleaned up on drop.
#![allow(dead_code)]

use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

pub use redis::Value;
pub mod backend;
pub mod cluster;
pub mod random_calls;
pub mod raw;
pub mod scenarios;
pub mod vectors;
#[allow(unused_imports)]
pub use backend::{Backend, BACKENDS};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flavor {
    Redis,
    Valkey,
}

impl Flavor {
    fn binary(self) -> PathBuf {
        let env = |name: &str| std::env::var_os(name).map(PathBuf::from);
        match self {
            Flavor::Redis => env("RL_REDIS_SERVER").unwrap_or_else(|| "redis-server".into()),
            Flavor::Valkey => env("RL_VALKEY_SERVER").unwrap_or_else(|| {
                let local = manifest_dir().join(".tools/bin/valkey-server");
                if local.exists() {
                    local
                } else {
                    "valkey-server".into()
                }
            }),
        }
    }
}

/// A fresh, empty folder for one test's files (a policy file, a library written from one).
pub fn temp_folder(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("rl-test-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

pub fn manifest_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The module under test: `$RL_MODULE` (set by `make test`), else a fresh release build.
pub fn module_path() -> &'static PathBuf {
    static PATH: OnceLock<PathBuf> = OnceLock::new();
    PATH.get_or_init(|| {
        if let Some(path) = std::env::var_os("RL_MODULE") {
            return PathBuf::from(path);
        }
        let status = Command::new(env!("CARGO"))
            .args(["build", "--release", "--lib", "--quiet"])
            .current_dir(manifest_dir())
            .status()
            .expect("run cargo build");
        assert!(status.success(), "cargo build --release failed");
        manifest_dir().join("target/release/librl.so")
    })
}

pub struct Server {
    pub flavor: Flavor,
    pub port: u16,
    pub dir: PathBuf,
    child: Child,
    /// Everything after `--port N`, kept for restarts.
    args: Vec<std::ffi::OsString>,
    /// What the server runs under (empty: nothing).
    wrapper: Vec<std::ffi::OsString>,
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("bind a free port")
        .port()
}

/// Starts the server binary (under `wrapper`, e.g. valgrind, if not empty) and
/// waits until it answers; `None` if it exited (e.g. the port was taken meanwhile).
fn spawn(
    flavor: Flavor,
    port: u16,
    args: &[std::ffi::OsString],
    wrapper: &[std::ffi::OsString],
) -> Option<Child> {
    let mut command = match wrapper.split_first() {
        Some((program, rest)) => {
            let mut c = Command::new(program);
            c.args(rest).arg(flavor.binary());
            c
        }
        None => Command::new(flavor.binary()),
    };
    let mut child = command
        .arg("--port")
        .arg(port.to_string())
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| {
            panic!(
                "cannot start {:?} ({e}); run `make test` to install it",
                flavor.binary()
            )
        });
    let patience = Duration::from_secs(if wrapper.is_empty() { 10 } else { 120 });
    if wait_ready(&mut child, port, patience) {
        return Some(child);
    }
    let _ = child.kill();
    let _ = child.wait();
    None
}

/// Waits until the server answers on `port` as itself (its `process_id`: another
/// test's server that took the port meanwhile answers too, and this one then
/// exits, unable to bind) and has loaded its data (`PING` answers `LOADING`
/// until then); false if it exited.
fn wait_ready(child: &mut Child, port: u16, patience: Duration) -> bool {
    let deadline = Instant::now() + patience;
    let url = format!("redis://127.0.0.1:{port}/");
    let ours = format!("process_id:{}", child.id());
    while Instant::now() < deadline {
        if let Ok(Some(_)) = child.try_wait() {
            return false;
        }
        let ready = redis::Client::open(url.as_str())
            .and_then(|c| c.get_connection())
            .and_then(|mut c| {
                let info: String = redis::cmd("INFO").arg("server").query(&mut c)?;
                let pong: String = redis::cmd("PING").query(&mut c)?;
                Ok(pong == "PONG" && info.lines().any(|l| l.trim_end() == ours))
            });
        if ready.unwrap_or(false) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    false
}

/// The module built with the `debug-commands` feature (RL.DEBUG): `$RL_DEBUG_MODULE`
/// (`make test` builds the tests with that feature, so their own build of the library
/// is it), else a build of its own, in its own target dir.
pub fn debug_module_path() -> &'static PathBuf {
    static PATH: OnceLock<PathBuf> = OnceLock::new();
    PATH.get_or_init(|| {
        if let Some(path) = std::env::var_os("RL_DEBUG_MODULE") {
            return PathBuf::from(path);
        }
        let target = manifest_dir().join("target/debug-commands");
        let status = Command::new(env!("CARGO"))
            .args([
                "build",
                "--profile",
                "harness",
                "--lib",
                "--quiet",
                "--features",
                "debug-commands",
            ])
            .arg("--target-dir")
            .arg(&target)
            .current_dir(manifest_dir())
            .status()
            .expect("run cargo build");
        assert!(
            status.success(),
            "cargo build --features debug-commands failed"
        );
        target.join("harness/librl.so")
    })
}

impl Server {
    pub fn start(flavor: Flavor) -> Server {
        Server::start_with(flavor, &[])
    }

    /// Starts a server with extra `--name value` arguments (no module when
    /// `extra` contains `"--no-module"`, which is not passed on).
    pub fn start_with(flavor: Flavor, extra: &[&str]) -> Server {
        let no_module = extra.contains(&"--no-module");
        let extra: Vec<&str> = extra
            .iter()
            .copied()
            .filter(|a| *a != "--no-module")
            .collect();
        Server::launch(flavor, (!no_module).then(module_path), &extra, &[])
    }

    /// Starts a server with the test build of the module (`RL.DEBUG`) under
    /// valgrind's memcheck, its report
    /// in `dir/memcheck.log` (see [`Server::memcheck_errors`]). Redis's own
    /// allocator (jemalloc, a shared library on Debian) is replaced by
    /// valgrind's, so that every heap block is checked.
    pub fn start_memcheck(flavor: Flavor, extra: &[&str]) -> Server {
        let log = std::env::temp_dir().join(format!("rl-memcheck-{}-%p.log", std::process::id()));
        let wrapper: Vec<std::ffi::OsString> = [
            "valgrind".into(),
            "--tool=memcheck".into(),
            "--soname-synonyms=somalloc=libjemalloc.so*".into(),
            "--error-limit=no".into(),
            "--leak-check=no".into(),
            format!("--log-file={}", log.display()),
        ]
        .into_iter()
        .map(Into::into)
        .collect();
        Server::launch(flavor, Some(debug_module_path()), extra, &wrapper)
    }

    /// Shuts a memory-checked server down and returns valgrind's report if
    /// it counted any error (an invalid read or write, a use of freed or
    /// uninitialised memory), else an empty string.
    pub fn memcheck_errors(mut self) -> String {
        if let Ok(mut c) = self.try_connect() {
            let _ = redis::cmd("SHUTDOWN").arg("NOSAVE").query::<Value>(&mut c);
        }
        let _ = self.child.wait();
        let pattern = format!("rl-memcheck-{}-{}.log", std::process::id(), self.child.id());
        let path = std::env::temp_dir().join(pattern);
        let report = std::fs::read_to_string(&path).expect("the memcheck report");
        let _ = std::fs::remove_file(&path);
        match report.contains("ERROR SUMMARY: 0 errors") {
            true => String::new(),
            false => report,
        }
    }

    /// Starts a server with the test-only build of the module, which adds
    /// `RL.DEBUG CLOCK <offset_ms>` and `RL.DEBUG PANIC`.
    pub fn start_debug(flavor: Flavor) -> Server {
        Server::launch(flavor, Some(debug_module_path()), &[], &[])
    }

    fn launch(
        flavor: Flavor,
        module: Option<&PathBuf>,
        extra: &[&str],
        wrapper: &[std::ffi::OsString],
    ) -> Server {
        static SEQ: AtomicU32 = AtomicU32::new(0);
        let seq = SEQ.fetch_add(1, Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("rl-test-{}-{seq}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("create server dir");
        let mut args: Vec<std::ffi::OsString> =
            ["--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
                .iter()
                .map(Into::into)
                .collect();
        args.extend(["--dir".into(), dir.clone().into_os_string()]);
        args.extend(["--logfile".into(), dir.join("server.log").into_os_string()]);
        if let Some(module) = module {
            args.extend(["--loadmodule".into(), module.clone().into_os_string()]);
        }
        args.extend(extra.iter().map(Into::into));
        for _attempt in 0..5 {
            let port = free_port();
            if let Some(child) = spawn(flavor, port, &args, wrapper) {
                return Server {
                    flavor,
                    port,
                    dir,
                    child,
                    args,
                    wrapper: wrapper.to_vec(),
                };
            }
        }
        panic!(
            "{flavor:?} did not start; log: {}",
            std::fs::read_to_string(dir.join("server.log")).unwrap_or_default()
        );
    }

    /// Stops the server with `SHUTDOWN NOSAVE` (the AOF, if any, is flushed; no RDB
    /// is written) and starts it again on the same port, directory and arguments.
    pub fn restart(&mut self) {
        if let Ok(mut c) = self.try_connect() {
            let _ = redis::cmd("SHUTDOWN").arg("NOSAVE").query::<Value>(&mut c);
        }
        let deadline = Instant::now() + Duration::from_secs(10);
        while matches!(self.child.try_wait(), Ok(None)) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
        self.child = spawn(self.flavor, self.port, &self.args, &self.wrapper)
            .unwrap_or_else(|| panic!("restart failed; log: {}", self.log()));
    }

    fn try_connect(&self) -> redis::RedisResult<redis::Connection> {
        redis::Client::open(self.url())?.get_connection()
    }

    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.port)
    }

    pub fn conn(&self) -> redis::Connection {
        self.try_connect().expect("connect to the test server")
    }

    /// True while the process runs and answers PING.
    pub fn alive(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
            && self
                .try_connect()
                .and_then(|mut c| redis::cmd("PING").query::<String>(&mut c))
                .is_ok()
    }

    /// A server that streams its initial sync to replicas at once (Redis
    /// otherwise waits `repl-diskless-sync-delay`, 5 s, for more replicas).
    pub fn start_master(flavor: Flavor) -> Server {
        Server::start_with(flavor, &["--repl-diskless-sync-delay", "0"])
    }

    /// A replica of this server, with or without the module, once its initial
    /// sync is done.
    pub fn replica(&self, with_module: bool) -> Server {
        let port = self.port.to_string();
        let mut args = vec!["--replicaof", "127.0.0.1", port.as_str()];
        if !with_module {
            args.push("--no-module");
        }
        let replica = Server::start_with(self.flavor, &args);
        let c = &mut replica.conn();
        let deadline = Instant::now() + Duration::from_secs(10);
        while info(c, "replication", "master_link_status") != "up" {
            assert!(Instant::now() < deadline, "the replica never synced");
            std::thread::sleep(Duration::from_millis(20));
        }
        replica
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("server.log")).unwrap_or_default()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Runs an `RL.*` command given as words and returns its five integers.
pub fn rl(c: &mut redis::Connection, words: &str) -> Vec<i64> {
    let v: Vec<&str> = words.split_whitespace().collect();
    let mut cmd = redis::cmd(v[0]);
    cmd.arg(&v[1..]);
    cmd.query(c).unwrap_or_else(|e| panic!("{words}: {e}"))
}

/// Runs a command given as words and returns its error text (`CODE message`).
pub fn rl_err(c: &mut redis::Connection, words: &str) -> String {
    let v: Vec<&str> = words.split_whitespace().collect();
    let mut cmd = redis::cmd(v[0]);
    cmd.arg(&v[1..]);
    match cmd.query::<Value>(c) {
        Ok(v) => panic!("{words}: expected an error, got {v:?}"),
        Err(e) => error_text(&e),
    }
}

/// An error as the server sent it: `CODE message`.
pub fn error_text(e: &redis::RedisError) -> String {
    match (e.code(), e.detail()) {
        (Some(code), Some(detail)) => format!("{code} {detail}"),
        (Some(code), None) => code.to_string(),
        _ => e.to_string(),
    }
}

pub const HOUR_MS: i64 = 3_600_000;

/// The wall clock in milliseconds since the epoch, as the servers read it.
/// Moves the test build's clock (`RL.DEBUG CLOCK`, `Server::start_debug`) by
/// `offset_ms` from the real one.
pub fn set_clock(c: &mut redis::Connection, offset_ms: i64) {
    let ok: String = redis::cmd("RL.DEBUG")
        .arg("CLOCK")
        .arg(offset_ms)
        .query(c)
        .unwrap();
    assert_eq!(ok, "OK");
}

pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock after 1970")
        .as_millis() as i64
}

/// Asserts `v` lies within `[lo, hi]`.
pub fn within(v: i64, lo: i64, hi: i64) {
    assert!((lo..=hi).contains(&v), "{v} not in [{lo}, {hi}]");
}

/// A command given as words.
pub fn command(words: &str) -> redis::Cmd {
    let v: Vec<&str> = words.split_whitespace().collect();
    let mut cmd = redis::cmd(v[0]);
    cmd.arg(&v[1..]);
    cmd
}

/// The value of `field` in `INFO section`.
pub fn info(c: &mut redis::Connection, section: &str, field: &str) -> String {
    let text: String = run(c, &format!("INFO {section}"));
    text.lines()
        .find_map(|line| line.strip_prefix(field)?.strip_prefix(':'))
        .unwrap_or_else(|| panic!("INFO {section} has no {field}:\n{text}"))
        .to_string()
}

/// The dirty counter: writes since the last save (no save point runs in tests).
pub fn dirty(c: &mut redis::Connection) -> u64 {
    info(c, "persistence", "rdb_changes_since_last_save")
        .parse()
        .expect("rdb_changes_since_last_save is a number")
}

pub fn pexpiretime(c: &mut redis::Connection, key: &str) -> i64 {
    run(c, &format!("PEXPIRETIME {key}"))
}

/// Runs any command given as words.
pub fn run<T: redis::FromRedisValue>(c: &mut redis::Connection, words: &str) -> T {
    let v: Vec<&str> = words.split_whitespace().collect();
    let mut cmd = redis::cmd(v[0]);
    cmd.arg(&v[1..]);
    cmd.query(c).unwrap_or_else(|e| panic!("{words}: {e}"))
}

/// Declares each test once per server flavor: `mod redis` and `mod valkey`.
#[macro_export]
macro_rules! server_tests {
    ($($(#[$meta:meta])* fn $name:ident($flavor:ident) $body:block)*) => {
        mod redis_7 {
            #[allow(unused_imports)]
            use super::*;
            $($(#[$meta])* #[test] fn $name() {
                let $flavor = $crate::common::Flavor::Redis;
                $body
            })*
        }
        mod valkey_9 {
            #[allow(unused_imports)]
            use super::*;
            $($(#[$meta])* #[test] fn $name() {
                let $flavor = $crate::common::Flavor::Valkey;
                $body
            })*
        }
    };
}

/// A key's penalty as stored (after a string state, as a key's whole value, or as a
/// sliding log's member scored below every entry): `(end, len, keep)` in ms.
pub fn stored_penalty(c: &mut redis::Connection, key: &str) -> Option<(i64, i64, i64)> {
    let text: Option<String> = match run::<String>(c, &format!("TYPE {key}")).as_str() {
        "string" => run(c, &format!("GET {key}")),
        "zset" => run::<Vec<String>>(c, &format!("ZRANGEBYSCORE {key} -inf -1")).pop(),
        _ => None,
    };
    let text = text?;
    let at = text.find("penalty:")?;
    let f: Vec<i64> = text[at + 8..]
        .split(':')
        .map(|v| v.parse().unwrap())
        .collect();
    Some((f[0], f[1], f[2]))
}
