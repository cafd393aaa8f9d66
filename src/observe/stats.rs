//! `INFO rl`: per-command counters (calls, admitted, denied, errors, and the
//! total cost admitted and denied), kept by a [`Ledger`] so that they clear
//! exactly when Redis's own command statistics clear. Redis's counts are read
//! from `INFO commandstats` only when `INFO rl` is asked, and from the cron
//! event while calls are waiting to be settled: never while a command runs, and
//! no other command pays anything. Everything runs on Redis's main thread; the
//! mutex only makes the static `Sync`.

use std::ffi::{CStr, CString};
use std::sync::{Mutex, MutexGuard, OnceLock};

use super::ledger::{self, Ledger, Outcome, PolicyTally, Tally, Target, Token};
use super::top::{self, Entry};
use crate::config;
use crate::ffi::{server_version, ServerInfo};

/// The most commands counted (the command table is checked against it).
pub const SLOTS: usize = 16;

/// One counted command: its label (as in error messages), its name as
/// registered (`rl.gcra`) and its `INFO rl` field name (`gcra`).
#[derive(Clone, Copy)]
pub struct Counted {
    pub label: &'static str,
    pub name: &'static CStr,
    pub field: &'static CStr,
}

/// The counted commands, in slot order, and each one's field in `INFO
/// commandstats` (`cmdstat_rl.gcra`); set once, when the module loads.
static COUNTED: OnceLock<Vec<(Counted, CString)>> = OnceLock::new();

/// Sets the counted commands (at load, from the command table; at most [`SLOTS`]).
pub fn register(commands: impl Iterator<Item = Counted>) {
    let table = commands
        .take(SLOTS)
        .map(|c| {
            let stat = format!("cmdstat_{}", c.name.to_string_lossy());
            (c, CString::new(stat).expect("command names hold no NUL"))
        })
        .collect();
    let _ = COUNTED.set(table);
}

fn counted() -> &'static [(Counted, CString)] {
    COUNTED.get().map_or(&[], Vec::as_slice)
}

/// Calls kept before a call settles them itself (16 bytes each): bounds the
/// memory when the cron event cannot run, e.g. during a long script. Test
/// builds use a small bound, so that tests reach it.
const MAX_RECENT: usize = if cfg!(feature = "debug-commands") {
    64
} else {
    1 << 20
};

/// Denials kept before a call settles them itself: bounds their names'
/// memory when the cron event cannot run.
const MAX_RECENT_DENIALS: usize = if cfg!(feature = "debug-commands") {
    16
} else {
    4096
};

struct State {
    ledger: Ledger<SLOTS>,
    /// The keys the call in progress denied, each with the policy of its
    /// layer (a `POLICY` clause), if any.
    denied: Vec<(Option<u32>, Box<[u8]>)>,
    /// The decision of the call in progress, if it made one: admitted, its
    /// cost, and whether it left at most a fifth of the limit.
    decided: Option<(bool, u64, bool)>,
    /// The call in progress waited (`BLOCK`) before its decision: its token.
    waited: Option<Token>,
    /// The token of the next call that blocks.
    next_token: Token,
    /// The named policy the call in progress decides by (its id, and whether
    /// it is a shadow one), once it was found.
    policy: Option<(u32, bool)>,
    /// The call in progress started a penalty.
    penalized: bool,
}

static STATE: Mutex<State> = Mutex::new(State {
    ledger: Ledger::new(),
    denied: Vec::new(),
    decided: None,
    waited: None,
    next_token: 0,
    policy: None,
    penalized: false,
});

fn state() -> MutexGuard<'static, State> {
    // A panic never happens while the lock is held; recover the data if one did.
    STATE.lock().unwrap_or_else(|e| e.into_inner())
}

/// The slot of the command labelled `label`: labels are the command table's
/// own constants, so their addresses usually match (one compare per slot);
/// otherwise, by text.
fn index(label: &str) -> Option<usize> {
    let table = counted();
    let same = |(c, _): &(Counted, CString)| std::ptr::eq(c.label, label);
    table
        .iter()
        .position(same)
        .or_else(|| table.iter().position(|(c, _)| c.label == label))
}

/// The call in progress decided: admitted or denied, for `cost` units (a
/// refund counts as admitted with no cost); `near`: admitted, leaving at
/// most a fifth of the limit (`near_limit`).
pub fn decision(allowed: bool, cost: u64, near: bool) {
    state().decided = Some((allowed, cost, near));
}

/// Whether an admission that left `remaining` of `limit` is near the limit:
/// at most a fifth of it is left (rounded down).
#[inline]
pub fn near_limit(remaining: u64, limit: u64) -> bool {
    remaining <= limit / 5
}

/// The call in progress denied `key` (`RL.TOP`), in a layer of `policy`'s
/// (a `POLICY` clause) or else of the call's own policy or command. Nothing
/// is kept while `rl.top-keys` is 0.
#[cold]
pub fn denied(key: &[u8], policy: Option<u32>) {
    if config::top_keys() > 0 {
        state().denied.push((policy, top::kept_name(key)));
    }
}

/// Whose summary `RL.TOP` reads.
pub enum TopOf<'a> {
    /// A named policy's, by id.
    Policy(u32),
    /// A command's, by its registered name (`rl.gcra`); `None` if no
    /// counted command has that name.
    Command(&'a [u8]),
}

/// The `n` keys denied most by `of` since the counters were last cleared,
/// heaviest first (settled against the server's counts first); `None` for
/// an unknown command.
pub fn top(of: TopOf, n: usize) -> Option<Vec<Entry>> {
    let command = match of {
        TopOf::Command(name) => Some(
            counted()
                .iter()
                .position(|(c, _)| c.name.to_bytes().eq_ignore_ascii_case(name))?,
        ),
        TopOf::Policy(_) => None,
    };
    let mut state = state();
    settle(&mut state);
    if config::top_keys() == 0 {
        return Some(Vec::new());
    }
    Some(match (command, of) {
        (Some(i), _) => state.ledger.command_top(i).top(n),
        (None, TopOf::Policy(id)) => state.ledger.policy_top(id).map_or(Vec::new(), |s| s.top(n)),
        (None, TopOf::Command(_)) => Vec::new(),
    })
}

/// The call in progress started a penalty (`INFO rl_policies`' `penalties`).
pub fn penalty_started() {
    state().penalized = true;
}

/// The call in progress decides by the named policy `id` (`shadow`: a shadow one).
pub fn by_policy(id: u32, shadow: bool) {
    state().policy = Some((id, shadow));
}

/// A policy was created: its counters start at zero.
pub fn policy_added(id: u32) {
    state().ledger.add_policy(id);
}

/// A policy was deleted: its counters go.
pub fn policy_removed(id: u32) {
    state().ledger.remove_policy(id);
}

/// Each of `ids`' counters, settled against the server's counts first.
pub fn policy_tallies(ids: &[u32]) -> Vec<PolicyTally> {
    let mut state = state();
    settle(&mut state);
    ids.iter()
        .map(|&id| state.ledger.policy_tally(id))
        .collect()
}

/// The call in progress waited (`BLOCK`, under `token`) before its decision.
pub fn waited(token: Token) {
    state().waited = Some(token);
}

/// True where the server counts a blocked call when it blocks (Redis before
/// 7.2), not when it is answered (Redis 7.2+, Valkey).
fn counts_at_block() -> bool {
    use std::sync::atomic::{AtomicU8, Ordering};
    static AT_BLOCK: AtomicU8 = AtomicU8::new(0);
    match AT_BLOCK.load(Ordering::Relaxed) {
        1 => true,
        2 => false,
        _ => {
            let version = server_version();
            let at_block = version < 0x00_07_02_00;
            AT_BLOCK.store(if at_block { 1 } else { 2 }, Ordering::Relaxed);
            at_block
        }
    }
}

/// A waiting call of `label` (blocked under `token`) ended without a reply
/// (its client went away).
pub fn abandoned(label: &str, token: Token) {
    if counts_at_block() {
        if let Some(i) = index(label) {
            state().ledger.record(i, Outcome::Abandoned(token));
        }
    }
}

/// A call of `label` started waiting (`BLOCK`); it is recorded now if the
/// server counts it now, else when it is answered. Returns the token its
/// completion is reported with.
pub fn blocked(label: &str) -> Token {
    let mut state = state();
    let token = state.next_token;
    state.next_token = token.wrapping_add(1);
    // The call is answered later: its policy (if any) goes with its reply.
    let policy = state.policy.take();
    if counts_at_block() {
        if let Some(i) = index(label) {
            if state.ledger.recent() >= MAX_RECENT {
                settle(&mut state);
            }
            match policy {
                Some((id, shadow)) => {
                    let by = ledger::ByPolicy {
                        id,
                        shadow,
                        penalized: false,
                    };
                    state.ledger.record_policy(i, Outcome::Blocked(token), by)
                }
                None => state.ledger.record(i, Outcome::Blocked(token)),
            }
        }
    }
    token
}

/// A call finished: with an error, or with a reply.
pub fn call(label: &str, failed: bool) {
    let mut state = state();
    let decided = state.decided.take();
    let waited = state.waited.take();
    let policy = state.policy.take();
    let penalized = std::mem::take(&mut state.penalized);
    // Only a call that denied has keys to record (`RL.TOP`).
    let denied_any = !state.denied.is_empty();
    if state.ledger.recent() >= MAX_RECENT
        || (denied_any && state.ledger.recent_denials() + state.denied.len() > MAX_RECENT_DENIALS)
    {
        // Every call recorded so far has returned, so Redis has counted it; this
        // one is not recorded yet.
        settle(&mut state);
    }
    if denied_any && (failed || index(label).is_none()) {
        state.denied.clear();
    }
    if let Some(i) = index(label) {
        let outcome = match (failed, decided) {
            // A blocked call the server counted when it blocked (`blocked`).
            (true, _) => match waited {
                Some(token) if counts_at_block() => Outcome::Abandoned(token),
                _ => Outcome::Error,
            },
            (false, Some((allowed, cost, near))) => match waited {
                Some(token) if counts_at_block() => Outcome::Late {
                    allowed,
                    cost,
                    near,
                    token,
                },
                Some(_) => Outcome::Waited {
                    allowed,
                    cost,
                    near,
                },
                None => Outcome::Decided {
                    allowed,
                    cost,
                    near,
                },
            },
            (false, None) => Outcome::Answered,
        };
        if denied_any && !failed {
            record_denials(&mut state, i, policy.map(|(id, _)| id));
        }
        match policy {
            Some((id, shadow)) => {
                let by = ledger::ByPolicy {
                    id,
                    shadow,
                    penalized,
                };
                state.ledger.record_policy(i, outcome, by)
            }
            None => state.ledger.record(i, outcome),
        }
    }
}

/// Records the keys the call in progress (of command `i`, by policy `by`)
/// denied: a `POLICY` clause's in its policy's summary, else the call's
/// policy's or command's (`RL.TOP`).
#[cold]
fn record_denials(state: &mut State, i: usize, by: Option<u32>) {
    for (layer, key) in std::mem::take(&mut state.denied) {
        let target = match layer.or(by) {
            Some(id) => Target::Policy(id),
            None => Target::Command,
        };
        state.ledger.record_denial(i, target, key);
    }
}

/// Each counted command's `calls` in `INFO commandstats` (absent: 0); `None`
/// if the server does not answer.
fn redis_calls() -> Option<[u64; SLOTS]> {
    let info = ServerInfo::read(c"commandstats")?;
    let mut calls = [0u64; SLOTS];
    for (slot, (_, field)) in calls.iter_mut().zip(counted()) {
        *slot = info.field(field).map_or(0, calls_of);
    }
    Some(calls)
}

/// `calls=N` in a commandstats value (`calls=3,usec=...`); 0 if absent.
fn calls_of(text: &[u8]) -> u64 {
    text.split(|&b| b == b',')
        .find_map(|kv| kv.strip_prefix(b"calls="))
        .and_then(crate::decimal::parse_u64)
        .unwrap_or(0)
}

/// Settles the ledger against Redis's counts.
fn settle(state: &mut State) {
    state.ledger.top_keys = config::top_keys();
    if let Some(calls) = redis_calls() {
        state.ledger.settle(calls);
    }
}

/// The cron event (server `hz` times a second): settles calls recorded since
/// the last look, so a reset is seen before the record grows large.
pub fn cron() {
    let mut state = state();
    if state.ledger.recent() > 0 {
        settle(&mut state);
    }
}

/// Each counted command's tallies, settled against the server's counts first
/// unless this is for a crash report (which must not take the lock or call
/// into the server).
pub fn tallies(for_crash_report: bool) -> Vec<(Counted, Tally)> {
    let tallies = match (for_crash_report, STATE.try_lock()) {
        (false, Ok(mut state)) => {
            settle(&mut state);
            state.ledger.tallies()
        }
        (_, Ok(state)) => state.ledger.tallies(),
        (_, Err(_)) => [Tally::default(); SLOTS],
    };
    counted().iter().map(|(c, _)| *c).zip(tallies).collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn reads_calls_from_a_commandstats_value() {
        assert_eq!(
            super::calls_of(b"calls=42,usec=7,usec_per_call=0.17,rejected_calls=0"),
            42
        );
        assert_eq!(super::calls_of(b"usec=7"), 0);
    }
}
