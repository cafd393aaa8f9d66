//! Operator settings: `loadmodule librl.so <name> <value> ...` at load time and
//! `CONFIG SET/GET rl.<name>` at run time. Redis refuses out-of-range values
//! with its own error naming the setting. Every setting's default and range
//! is a fact (facts/rl.toml's `settings`, generated into `facts::settings`);
//! `lib.rs` registers them from the constants here.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::Mutex;

use crate::facts::settings;

/// `rl.sliding-log-max-limit`: the largest `limit` RL.SLIDINGLOG accepts (each
/// key holds up to `limit` entries). Invariant: within [`SLIDING_LOG_MAX_RANGE`].
pub static SLIDING_LOG_MAX_LIMIT: AtomicI64 = AtomicI64::new(DEFAULT_SLIDING_LOG_MAX as i64);
pub const DEFAULT_SLIDING_LOG_MAX: u64 = settings::SLIDING_LOG_MAX_LIMIT.default as u64;
pub const SLIDING_LOG_MAX_RANGE: (i64, i64) = settings::SLIDING_LOG_MAX_LIMIT.range;

/// `rl.max-waiters`: the most clients waiting (`BLOCK`) at once; beyond it,
/// `BLOCK` decides at once. `0` turns waiting off. A waiter costs the server
/// about 35 KB (the reply buffer of its blocked-client handle), so the
/// default is a budget of about 35 MB.
pub static MAX_WAITERS: AtomicI64 = AtomicI64::new(DEFAULT_MAX_WAITERS);
pub const DEFAULT_MAX_WAITERS: i64 = settings::MAX_WAITERS.default;
pub const MAX_WAITERS_RANGE: (i64, i64) = settings::MAX_WAITERS.range;

/// `rl.max-waiters-per-key`: the most clients waiting on one key (database
/// and name), so that one key cannot take every slot of `rl.max-waiters`.
pub static MAX_WAITERS_PER_KEY: AtomicI64 = AtomicI64::new(DEFAULT_MAX_WAITERS_PER_KEY);
pub const DEFAULT_MAX_WAITERS_PER_KEY: i64 = settings::MAX_WAITERS_PER_KEY.default;
pub const MAX_WAITERS_PER_KEY_RANGE: (i64, i64) = settings::MAX_WAITERS_PER_KEY.range;

/// `rl.max-policies`: the most named policies a node holds (`RL.POLICY SET`
/// of a new name beyond it is refused; lowering it deletes none, and a start
/// loads a policy file holding more, up to the range's maximum: `policy.rs`).
pub static MAX_POLICIES: AtomicI64 = AtomicI64::new(DEFAULT_MAX_POLICIES);
pub const DEFAULT_MAX_POLICIES: i64 = settings::MAX_POLICIES.default;
pub const MAX_POLICIES_RANGE: (i64, i64) = settings::MAX_POLICIES.range;

/// `rl.max-policies` in force.
pub fn max_policies() -> usize {
    MAX_POLICIES.load(Ordering::Relaxed).max(0) as usize
}

/// `rl.top-keys`: the most keys each policy's and command's `RL.TOP` summary
/// holds (`0`: none kept, `RL.TOP` answers an empty array).
pub static TOP_KEYS: AtomicI64 = AtomicI64::new(DEFAULT_TOP_KEYS);
pub const DEFAULT_TOP_KEYS: i64 = settings::TOP_KEYS.default;
pub const TOP_KEYS_RANGE: (i64, i64) = settings::TOP_KEYS.range;

/// `rl.top-keys` in force.
#[inline]
pub fn top_keys() -> usize {
    TOP_KEYS.load(Ordering::Relaxed).max(0) as usize
}

/// `rl.policy-file`: the policy file, read at load and by `RL.POLICY LOAD`,
/// written by `RL.POLICY SAVE`; empty for none. Fixed at load (immutable, as
/// `aclfile` is): no command can point the module at another file. Once the
/// module is loaded it is absolute ([`fix_policy_file`]).
pub static POLICY_FILE: Mutex<String> = Mutex::new(String::new());

/// The module argument naming the policy file (not a shared fact: the library
/// has none).
pub const POLICY_FILE_ARG: &str = "policy-file";

/// `rl.policy-file`, if one was given.
pub fn policy_file() -> Option<PathBuf> {
    let path = POLICY_FILE.lock().unwrap_or_else(|e| e.into_inner());
    (!path.is_empty()).then(|| PathBuf::from(path.as_str()))
}

/// Fixes `rl.policy-file` when the module loads: a relative path is made
/// absolute against the working directory then (the server's `dir` at start),
/// so that a later `CONFIG SET dir`, which moves the server's working
/// directory, moves no policy file, and `CONFIG GET rl.policy-file` shows the
/// file used.
pub fn fix_policy_file() -> Result<(), String> {
    let mut path = POLICY_FILE.lock().unwrap_or_else(|e| e.into_inner());
    if path.is_empty() || Path::new(path.as_str()).is_absolute() {
        return Ok(());
    }
    let cannot = |why: String| format!("policy file {path}: cannot make the path absolute: {why}");
    let folder = std::env::current_dir().map_err(|e| cannot(e.to_string()))?;
    let absolute = folder.join(path.as_str());
    let absolute = absolute
        .to_str()
        .ok_or_else(|| cannot("the working directory is not UTF-8".into()))?
        .to_owned();
    *path = absolute;
    Ok(())
}

/// `rl.gcra-command`: whether the module registers Redis's designed `GCRA`
/// command (where the server has none of its own). Read once, at load: it is
/// immutable (`CONFIG SET` refuses it), as the command table is fixed then.
pub static GCRA_COMMAND: AtomicBool = AtomicBool::new(DEFAULT_GCRA_COMMAND);
pub const DEFAULT_GCRA_COMMAND: bool = settings::GCRA_COMMAND;

/// `rl.gcra-command` as loaded.
pub fn gcra_command() -> bool {
    GCRA_COMMAND.load(Ordering::Relaxed)
}

/// `rl.max-waiters` in force.
pub fn max_waiters() -> usize {
    MAX_WAITERS.load(Ordering::Relaxed).max(0) as usize
}

/// `rl.max-waiters-per-key` in force.
pub fn max_waiters_per_key() -> usize {
    MAX_WAITERS_PER_KEY.load(Ordering::Relaxed).max(0) as usize
}

/// Limits that operators may configure, as one call sees them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Caps {
    /// The largest `RL.SLIDINGLOG` and `RL.ACQUIRE` limit.
    pub sliding_log_max: u64,
}

impl Default for Caps {
    fn default() -> Self {
        Caps {
            sliding_log_max: DEFAULT_SLIDING_LOG_MAX,
        }
    }
}

/// The caps in force for this call.
pub fn caps() -> Caps {
    Caps {
        sliding_log_max: SLIDING_LOG_MAX_LIMIT.load(Ordering::Relaxed).max(1) as u64,
    }
}

/// The widest caps the settings allow: what any policy `SAVE` wrote was
/// accepted under (a start reads the policy file under them).
pub fn widest_caps() -> Caps {
    Caps {
        sliding_log_max: SLIDING_LOG_MAX_RANGE.1 as u64,
    }
}

/// Checks `loadmodule librl.so <name> <value> ...` before the module loads: an
/// unknown name, a missing value or an out-of-range value refuses the load
/// with a message saying what is valid (Redis would otherwise accept it). The
/// integer settings and their ranges are `settings::INTEGERS`; the yes/no ones,
/// `settings::SWITCHES`, take `yes` or `no` in lowercase, exactly as the
/// module's configuration reads them (any other spelling would be ignored
/// there, so it is refused here).
pub fn check_module_args(args: &[&[u8]]) -> Result<(), String> {
    let mut pairs = args.chunks(2);
    pairs.try_for_each(|pair| {
        let name = String::from_utf8_lossy(pair[0]);
        if pair[0] == POLICY_FILE_ARG.as_bytes() {
            return match pair.get(1) {
                Some(path) if !path.is_empty() => Ok(()),
                _ => Err(format!("module argument '{name}' needs a path")),
            };
        }
        if settings::SWITCHES.iter().any(|s| pair[0] == s.as_bytes()) {
            return match pair.get(1) {
                Some(&(b"yes" | b"no")) => Ok(()),
                Some(_) => Err(format!("{name} must be yes or no")),
                None => Err(format!("module argument '{name}' needs a value")),
            };
        }
        let (min, max) = settings::INTEGERS
            .iter()
            .find(|known| pair[0].eq_ignore_ascii_case(known.name.as_bytes()))
            .map(|known| known.range)
            .ok_or_else(|| {
                format!(
                    "unknown module argument '{name}' (known: {})",
                    settings::NAMES
                )
            })?;
        let value = pair
            .get(1)
            .ok_or_else(|| format!("module argument '{name}' needs a value"))?;
        std::str::from_utf8(value)
            .ok()
            .and_then(|v| v.parse::<i64>().ok())
            .filter(|v| (min..=max).contains(v))
            .map(|_| ())
            .ok_or_else(|| format!("{name} must be an integer from {min} to {max}"))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn module_args_are_checked() {
        assert_eq!(check_module_args(&[]), Ok(()));
        assert_eq!(
            check_module_args(&[b"sliding-log-max-limit", b"500"]),
            Ok(())
        );
        let range = "sliding-log-max-limit must be an integer from 1 to 100000000";
        assert_eq!(
            check_module_args(&[b"sliding-log-max-limit", b"0"]),
            Err(range.into())
        );
        assert_eq!(
            check_module_args(&[b"sliding-log-max-limit", b"x"]),
            Err(range.into())
        );
        assert!(check_module_args(&[b"sliding-log-max-limit"])
            .unwrap_err()
            .contains("needs a value"));
        assert!(check_module_args(&[b"bogus", b"1"])
            .unwrap_err()
            .contains("unknown"));
        for ok in [&b"yes"[..], b"no"] {
            assert_eq!(check_module_args(&[b"gcra-command", ok]), Ok(()));
        }
        for bad in [&b"YES"[..], b"1", b"true", b""] {
            assert_eq!(
                check_module_args(&[b"gcra-command", bad]),
                Err("gcra-command must be yes or no".into())
            );
        }
        assert!(check_module_args(&[b"GCRA-COMMAND", b"no"])
            .unwrap_err()
            .contains("unknown"));
        assert_eq!(
            check_module_args(&[b"policy-file", b"/etc/rl.conf"]),
            Ok(())
        );
        for bad in [&[&b"policy-file"[..]][..], &[b"policy-file", b""]] {
            assert!(check_module_args(bad).unwrap_err().contains("needs a path"));
        }
        assert!(check_module_args(&[b"max-waiters", b"5", b"gcra-command"])
            .unwrap_err()
            .contains("needs a value"));
    }
}
