//! Many cheap connections for wait tests: each sends one command without
//! waiting for its reply (a thread per blocked client would not scale to
//! hundreds), then reads it, drops it, or is ended by the server.

use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use super::{info, Server};

/// One reply, as far as the wait tests need to tell replies apart.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Reply {
    Integers(Vec<i64>),
    /// A simple string (`+PONG`).
    Status(String),
    Error(String),
    /// The server closed the connection.
    Closed,
}

impl Reply {
    pub fn admitted(&self) -> bool {
        matches!(self, Reply::Integers(v) if v.first() == Some(&1))
    }
    pub fn denied(&self) -> bool {
        matches!(self, Reply::Integers(v) if v.first() == Some(&0))
    }
    pub fn error(&self) -> Option<&str> {
        match self {
            Reply::Error(e) => Some(e),
            _ => None,
        }
    }
}

/// A connection that sent one command and has not read its reply yet.
pub struct Raw {
    pub id: i64,
    reader: BufReader<TcpStream>,
}

fn resp(words: &[&str]) -> Vec<u8> {
    let mut out = format!("*{}\r\n", words.len()).into_bytes();
    for w in words {
        out.extend(format!("${}\r\n{w}\r\n", w.len()).into_bytes());
    }
    out
}

impl Raw {
    /// Connects, learns its client id, and sends `words` (given as one string).
    pub fn send(s: &Server, words: &str) -> Raw {
        let stream = TcpStream::connect(("127.0.0.1", s.port)).expect("connect");
        stream
            .set_read_timeout(Some(Duration::from_secs(30)))
            .expect("set a read timeout");
        let mut raw = Raw {
            id: 0,
            reader: BufReader::new(stream),
        };
        raw.write(&["CLIENT", "ID"]);
        raw.id = match raw.read() {
            Reply::Integers(v) => v[0],
            other => panic!("CLIENT ID: {other:?}"),
        };
        let words: Vec<&str> = words.split_whitespace().collect();
        raw.write(&words);
        raw
    }

    /// Sends another command (given as one string) on this connection.
    pub fn again(&mut self, words: &str) {
        let words: Vec<&str> = words.split_whitespace().collect();
        self.write(&words);
    }

    fn write(&mut self, words: &[&str]) {
        self.reader
            .get_mut()
            .write_all(&resp(words))
            .expect("send a command");
    }

    fn line(&mut self) -> Option<String> {
        let mut line = String::new();
        match self.reader.read_line(&mut line) {
            Ok(0) | Err(_) => None,
            Ok(_) => Some(line.trim_end().to_string()),
        }
    }

    /// True if a reply (or the end of the connection) is waiting to be read.
    pub fn ready(&mut self) -> bool {
        if !self.reader.buffer().is_empty() {
            return true;
        }
        let stream = self.reader.get_mut();
        stream.set_nonblocking(true).expect("non-blocking");
        let mut byte = [0u8; 1];
        let ready =
            !matches!(stream.peek(&mut byte), Err(e) if e.kind() == std::io::ErrorKind::WouldBlock);
        stream.set_nonblocking(false).expect("blocking");
        ready
    }

    /// Reads one reply: an integer (as a one-element list), an array of
    /// integers, or an error.
    pub fn read(&mut self) -> Reply {
        let Some(first) = self.line() else {
            return Reply::Closed;
        };
        match first.split_at(1) {
            (":", n) => Reply::Integers(vec![n.parse().expect("an integer")]),
            ("-", e) => Reply::Error(e.to_string()),
            ("+", status) => Reply::Status(status.to_string()),
            ("*", n) => {
                let n: usize = n.parse().expect("an array length");
                let items = (0..n).map(|_| {
                    let item = self.line().expect("an array item");
                    item[1..].parse().expect("an integer item")
                });
                Reply::Integers(items.collect())
            }
            _ => panic!("unexpected reply {first:?}"),
        }
    }
}

/// `INFO rl`'s `rl_waits`: (waiting, admitted, timed_out).
pub fn waits(c: &mut redis::Connection) -> (u64, u64, u64) {
    let line = info(c, "rl", "rl_waits");
    let field = |name: &str| -> u64 {
        line.split(',')
            .find_map(|kv| kv.strip_prefix(name)?.strip_prefix('='))
            .unwrap_or_else(|| panic!("{name} in {line}"))
            .parse()
            .unwrap()
    };
    (field("waiting"), field("admitted"), field("timed_out"))
}

/// Polls `done` every 5 ms for up to 20 s.
pub fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Sends `words` from `n` new connections; returns once all of them wait.
pub fn waiters(s: &Server, c: &mut redis::Connection, words: &str, n: usize) -> Vec<Raw> {
    let before = waits(c).0;
    let raws = (0..n).map(|_| Raw::send(s, words)).collect();
    wait_for(&format!("{n} waiters"), || waits(c).0 == before + n as u64);
    raws
}

/// `used_memory` without the replication backlog: the backlog holds the
/// writes last sent to replicas and grows past its configured size in whole
/// blocks (Valkey trims it lazily), so it is the server's, not ours.
fn used_memory(c: &mut redis::Connection) -> i64 {
    let text: String = super::run(c, "INFO memory");
    let field = |name: &str| -> i64 {
        text.lines()
            .find_map(|line| line.strip_prefix(name)?.strip_prefix(':'))
            .unwrap_or_else(|| panic!("INFO memory has no {name}"))
            .trim()
            .parse()
            .unwrap()
    };
    field("used_memory") - field("mem_replication_backlog")
}

/// Waits until only `c` is connected and nobody waits.
fn quiet(c: &mut redis::Connection) {
    wait_for("the other clients to leave", || {
        let clients: i64 = info(c, "clients", "connected_clients").parse().unwrap();
        clients == 1 && waits(c).0 == 0
    });
}

/// `used_memory` once only `c` is connected, nobody waits, and the server has
/// stopped giving memory back (it frees the temporary clients of ended waits
/// over its next cron runs): no new low for half a second.
pub fn settled_memory(c: &mut redis::Connection) -> i64 {
    quiet(c);
    let (mut low, mut steady) = (used_memory(c), 0);
    let deadline = Instant::now() + Duration::from_secs(20);
    while steady < 5 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
        let now = used_memory(c);
        steady = if now < low { 0 } else { steady + 1 };
        low = low.min(now);
    }
    low
}

/// Waits (up to 20 s) until `used_memory` is at most `limit`; returns the
/// last reading.
pub fn memory_back_to(c: &mut redis::Connection, limit: i64) -> i64 {
    quiet(c);
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let now = used_memory(c);
        if now <= limit || Instant::now() > deadline {
            return now;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}
