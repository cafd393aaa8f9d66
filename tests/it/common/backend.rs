//! The two backends of the conformance suite: the module's commands
//! (`RL.GCRA key ...`) and the Functions library `functions/rl.lua`
//! (`FCALL rl_gcra 1 key ...`). A scenario written with module command words runs
//! on either: [`Backend::cmd`] rewrites it for the library.

use super::{error_text, manifest_dir, Flavor, Server, Value};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backend {
    Module,
    Library,
}

pub const BACKENDS: [Backend; 2] = [Backend::Module, Backend::Library];

/// The library's source, as `FUNCTION LOAD` takes it.
pub fn library_source() -> String {
    std::fs::read_to_string(manifest_dir().join("functions/rl.lua")).expect("read functions/rl.lua")
}

/// Loads (or reloads) the library on the server `c` is connected to.
pub fn load_library(c: &mut redis::Connection) {
    let name: String = redis::cmd("FUNCTION")
        .arg("LOAD")
        .arg("REPLACE")
        .arg(library_source())
        .query(c)
        .expect("FUNCTION LOAD REPLACE functions/rl.lua");
    assert_eq!(name, "rl");
}

impl Server {
    /// A server with the library loaded: with the module too (mixed runs), or
    /// without it (the managed-Redis case).
    pub fn start_library(flavor: Flavor, with_module: bool) -> Server {
        let s = if with_module {
            Server::start(flavor)
        } else {
            Server::start_with(flavor, &["--no-module"])
        };
        load_library(&mut s.conn());
        s
    }
}

/// Module command words as the library's `FCALL` words: `RL.GCRA key a...` ->
/// `FCALL rl_gcra 1 key a...`, `RL.ALL n k... a...` -> `FCALL rl_all n k... a...`,
/// `CL.THROTTLE key a...` -> `FCALL cl_throttle 1 key a...`, `RL.PEEK ALGO key a...`
/// -> `FCALL_RO rl_peek 1 key ALGO a...`. A vector without a key becomes
/// `FCALL name 0` (Redis's own error, as the module's arity error is).
pub fn fcall_args(words: &[Vec<u8>]) -> Vec<Vec<u8>> {
    let name = String::from_utf8_lossy(&words[0]).to_ascii_lowercase();
    let function = name.replace('.', "_");
    if name == "rl.peek" {
        // The key comes second in RL.PEEK, first in FCALL's arguments.
        let mut out: Vec<Vec<u8>> = vec![b"FCALL_RO".to_vec(), function.into_bytes()];
        if words.len() > 2 {
            out.push(b"1".to_vec());
            out.push(words[2].clone());
            out.push(words[1].clone());
            out.extend(words[3..].iter().cloned());
        } else {
            out.push(b"0".to_vec());
            out.extend(words[1..].iter().cloned());
        }
        return out;
    }
    let mut out: Vec<Vec<u8>> = vec![b"FCALL".to_vec(), function.into_bytes()];
    if name == "rl.all" {
        out.extend(words[1..].iter().cloned());
    } else if words.len() > 1 {
        out.push(b"1".to_vec());
        out.extend(words[1..].iter().cloned());
    } else {
        out.push(b"0".to_vec());
    }
    out
}

impl Backend {
    /// The command for `words` (module command words) on this backend.
    pub fn cmd_args(self, words: &[Vec<u8>]) -> redis::Cmd {
        let v = match self {
            Backend::Module => words.to_vec(),
            Backend::Library => fcall_args(words),
        };
        let mut cmd = redis::cmd(std::str::from_utf8(&v[0]).expect("command name"));
        for a in &v[1..] {
            cmd.arg(a.as_slice());
        }
        cmd
    }

    pub fn cmd(self, words: &str) -> redis::Cmd {
        let v: Vec<Vec<u8>> = words
            .split_whitespace()
            .map(|w| w.as_bytes().to_vec())
            .collect();
        self.cmd_args(&v)
    }

    /// Runs a decision and returns its integers (five; `RL.ALL`'s first five).
    pub fn rl(self, c: &mut redis::Connection, words: &str) -> Vec<i64> {
        match self.value(c, words) {
            Ok(Value::Array(items)) => items
                .iter()
                .take(5)
                .map(|v| match v {
                    Value::Int(i) => *i,
                    other => panic!("{self:?} {words}: not an integer: {other:?}"),
                })
                .collect(),
            other => panic!("{self:?} {words}: {other:?}"),
        }
    }

    /// The raw reply, or the error text (`CODE message`).
    pub fn value(self, c: &mut redis::Connection, words: &str) -> Result<Value, String> {
        self.cmd(words)
            .query::<Value>(c)
            .map_err(|e| error_text(&e))
    }

    /// Runs a command that must fail and returns its error text.
    pub fn err(self, c: &mut redis::Connection, words: &str) -> String {
        match self.value(c, words) {
            Ok(v) => panic!("{self:?} {words}: expected an error, got {v:?}"),
            Err(e) => e,
        }
    }
}

/// True if an error text is a Lua runtime error escaping the library (which it
/// must never produce), rather than an error reply it chose.
pub fn is_lua_runtime_error(text: &str) -> bool {
    text.contains("user_function")
        || text.contains("Error running script")
        || text.contains("attempt to")
        || text.contains(".lua:")
        || text.contains("internal error")
}

/// Replies compared: errors must be identical; integers equal, except the time
/// fields (retry, reset: the last two of each five, in ms or CL.THROTTLE's seconds)
/// which may differ by the real time between the calls (`slack_ms`), and values
/// beyond 2^53 (Lua numbers are doubles), which must agree to 1 part in 10^12;
/// anything else (a string, a nil) equal.
pub fn replies_agree(a: &Result<Value, String>, b: &Result<Value, String>, slack_ms: i64) -> bool {
    fn flat(v: &Value, out: &mut Vec<Result<i64, Value>>) {
        match v {
            Value::Int(i) => out.push(Ok(*i)),
            Value::Array(items) => items.iter().for_each(|i| flat(i, out)),
            other => out.push(Err(other.clone())),
        }
    }
    match (a, b) {
        (Err(x), Err(y)) => x == y,
        (Ok(x), Ok(y)) => {
            let (mut p, mut q) = (vec![], vec![]);
            flat(x, &mut p);
            flat(y, &mut q);
            p.len() == q.len()
                && p.iter().zip(&q).enumerate().all(|(i, pair)| match pair {
                    (Ok(u), Ok(v)) => {
                        let (u, v, big) = (*u, *v, 1i64 << 53);
                        if u >= big || v >= big {
                            ((u as f64 - v as f64) / u as f64).abs() < 1e-12
                        } else if i % 5 >= 3 {
                            (u - v).abs() <= slack_ms
                        } else {
                            u == v
                        }
                    }
                    (x, y) => x == y,
                })
        }
        _ => false,
    }
}
