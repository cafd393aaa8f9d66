//! The bookkeeping behind `INFO rl`, free of Redis: per-command tallies that
//! clear exactly when Redis's own command statistics clear.
//!
//! Redis tells modules nothing when `CONFIG RESETSTAT` runs; what a module can
//! see is its effect, every command's `calls` in `INFO commandstats` starting
//! again from zero. So the ledger keeps every call since the last look at
//! Redis's counts ([`Ledger::settle`]) and Redis's count for each command at that
//! look. If Redis has since counted fewer calls of a command than the ledger
//! recorded, its statistics were reset in between, and exactly the last
//! `calls` recorded calls came after the reset: the tally becomes those.
//! Invariant (the module counts each call exactly when Redis does): after
//! `settle`, every tally covers exactly the calls since Redis's last reset.

use std::collections::BTreeMap;

use super::top::Summary;

/// What `INFO rl` shows for one command.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Tally {
    pub calls: u64,
    pub admitted: u64,
    pub denied: u64,
    pub errors: u64,
    pub cost_admitted: u64,
    pub cost_denied: u64,
    /// Admitted calls that left `remaining` at most a fifth of `limit`.
    pub near_limit: u64,
    /// Calls that waited (`BLOCK`) and were admitted.
    pub waits_admitted: u64,
    /// Calls that waited and were not admitted (their time ran out, or `CLIENT UNBLOCK`).
    pub waits_timed_out: u64,
}

/// What `INFO rl_policies` shows for one named policy.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PolicyTally {
    pub calls: u64,
    pub admitted: u64,
    /// Admitted calls that left `remaining` at most a fifth of `limit`.
    pub near_limit: u64,
    /// Denials of an enforced policy.
    pub denied: u64,
    /// Denials of a `SHADOW` policy (answered as admitted).
    pub shadow_denied: u64,
    pub errors: u64,
    /// Penalties started (`PENALTY`), shadow ones included.
    pub penalties: u64,
}

impl PolicyTally {
    fn add(&mut self, outcome: Outcome, shadow: bool, penalized: bool) {
        if outcome.is_call() {
            self.calls = self.calls.wrapping_add(1);
        }
        if penalized {
            self.penalties = self.penalties.wrapping_add(1);
        }
        if outcome.is_near() {
            self.near_limit = self.near_limit.wrapping_add(1);
        }
        let n = match outcome {
            Outcome::Error => &mut self.errors,
            Outcome::Decided { allowed: true, .. }
            | Outcome::Waited { allowed: true, .. }
            | Outcome::Late { allowed: true, .. } => &mut self.admitted,
            Outcome::Decided { .. } | Outcome::Waited { .. } | Outcome::Late { .. } => match shadow
            {
                true => &mut self.shadow_denied,
                false => &mut self.denied,
            },
            Outcome::Answered | Outcome::Blocked(_) | Outcome::Abandoned(_) => return,
        };
        *n = n.wrapping_add(1);
    }
}

/// Who made a call by a named policy: the policy's id, whether it was a
/// shadow one, and whether the call started a penalty.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ByPolicy {
    pub id: u32,
    pub shadow: bool,
    pub penalized: bool,
}

/// A recorded call made by a named policy: its place in `recent`, and by whom.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct PolicyCall {
    at: usize,
    by: ByPolicy,
}

/// Whose `RL.TOP` summary a denial counts in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target {
    /// The command's (a spelled-out call).
    Command,
    /// A named policy's, by id (`RL.LIMIT`, a `POLICY` clause).
    Policy(u32),
}

/// A recorded call's denial of a key (its name as `RL.TOP` keeps it).
#[derive(Clone, Debug, PartialEq, Eq)]
struct Denial {
    at: usize,
    target: Target,
    key: Box<[u8]>,
}

/// How one call ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Answered with an error.
    Error,
    /// A decision: admitted or not, for this cost; `near`: admitted, leaving
    /// at most a fifth of the limit.
    Decided {
        allowed: bool,
        cost: u64,
        near: bool,
    },
    /// Answered without a decision (`RL.RELEASE`).
    Answered,
    /// A decision after waiting (`BLOCK`), on a server that counts a blocked
    /// call when it is answered (Redis 7.2+, Valkey).
    Waited {
        allowed: bool,
        cost: u64,
        near: bool,
    },
    /// A call that started waiting, on a server that counts a blocked call
    /// when it blocks (Redis 7.0): counted now, decided later ([`Outcome::Late`]
    /// with the same [`Token`]).
    Blocked(Token),
    /// The decision of a [`Outcome::Blocked`] call: not a call of its own.
    Late {
        allowed: bool,
        cost: u64,
        near: bool,
        token: Token,
    },
    /// A [`Outcome::Blocked`] call that ends without a decision (its client
    /// went away, or got an error): not a call of its own.
    Abandoned(Token),
}

/// Names one blocked call, so that its completion is matched to it whatever
/// the order in which waits end. Unique among the waits not yet completed.
pub type Token = u64;

impl Outcome {
    /// True unless the outcome completes a call recorded earlier.
    fn is_call(self) -> bool {
        !matches!(self, Outcome::Late { .. } | Outcome::Abandoned(_))
    }

    /// True for an admission that left at most a fifth of the limit.
    fn is_near(self) -> bool {
        matches!(
            self,
            Outcome::Decided { near: true, .. }
                | Outcome::Waited { near: true, .. }
                | Outcome::Late { near: true, .. }
        )
    }
}

/// One call of the command at index `command` (its row in the table).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Call {
    command: u8,
    outcome: Outcome,
}

impl Tally {
    const ZERO: Tally = Tally {
        calls: 0,
        admitted: 0,
        denied: 0,
        errors: 0,
        cost_admitted: 0,
        cost_denied: 0,
        near_limit: 0,
        waits_admitted: 0,
        waits_timed_out: 0,
    };

    fn add(&mut self, outcome: Outcome) {
        if outcome.is_call() {
            self.calls = self.calls.wrapping_add(1);
        }
        match outcome {
            Outcome::Error => self.errors = self.errors.wrapping_add(1),
            Outcome::Decided {
                allowed,
                cost,
                near,
            } => {
                self.near_limit = self.near_limit.wrapping_add(near as u64);
                let (n, total) = if allowed {
                    (&mut self.admitted, &mut self.cost_admitted)
                } else {
                    (&mut self.denied, &mut self.cost_denied)
                };
                *n = n.wrapping_add(1);
                *total = total.wrapping_add(cost);
            }
            Outcome::Answered => {}
            Outcome::Waited {
                allowed,
                cost,
                near,
            }
            | Outcome::Late {
                allowed,
                cost,
                near,
                ..
            } => {
                self.calls = self.calls.wrapping_sub(1);
                self.add(Outcome::Decided {
                    allowed,
                    cost,
                    near,
                });
                let n = match allowed {
                    true => &mut self.waits_admitted,
                    false => &mut self.waits_timed_out,
                };
                *n = n.wrapping_add(1);
            }
            Outcome::Blocked(_) | Outcome::Abandoned(_) => {}
        }
    }
}

/// Calls' room kept across settles (16 bytes each); more is released.
const KEPT_CAPACITY: usize = 1024;

/// Tallies for `N` commands.
pub struct Ledger<const N: usize> {
    /// Each command's tally as of the last `settle`.
    settled: [Tally; N],
    /// Redis's `calls` for each command at the last `settle`.
    baseline: [u64; N],
    /// Every call since the last `settle`, oldest first.
    recent: Vec<Call>,
    /// Blocked calls settled and not completed yet: their command, and whether
    /// they were made before a reset (then their completion belongs to no tally).
    pending: BTreeMap<Token, (u8, bool)>,
    /// Each policy held's tally as of the last `settle`, by id: only policies
    /// added and not removed, so at most `rl.max-policies`.
    policies: BTreeMap<u32, PolicyTally>,
    /// The recent calls made by a policy, oldest first (only these pay).
    policy_calls: Vec<PolicyCall>,
    /// The commands whose calls may be by policy: their reset clears every
    /// policy's tally, as Redis clears all its statistics at once.
    policy_commands: [bool; N],
    /// The keys the recent calls denied, in call order (only denials pay).
    denials: Vec<Denial>,
    /// Each command's `RL.TOP` summary as of the last settle.
    command_tops: [Summary; N],
    /// Each policy held's `RL.TOP` summary as of the last settle (made at
    /// its first denial).
    policy_tops: BTreeMap<u32, Summary>,
    /// `rl.top-keys`: the most entries per summary.
    pub top_keys: usize,
}

impl<const N: usize> Ledger<N> {
    pub const fn new() -> Ledger<N> {
        Ledger {
            settled: [Tally::ZERO; N],
            baseline: [0; N],
            recent: Vec::new(),
            pending: BTreeMap::new(),
            policies: BTreeMap::new(),
            policy_calls: Vec::new(),
            policy_commands: [false; N],
            denials: Vec::new(),
            command_tops: [const { Summary::new() }; N],
            policy_tops: BTreeMap::new(),
            top_keys: 0,
        }
    }

    /// The next call recorded (of `command`) denied `key` (a name as
    /// `RL.TOP` keeps it), counting in `target`'s summary.
    pub fn record_denial(&mut self, command: usize, target: Target, key: Box<[u8]>) {
        if let Target::Policy(_) = target {
            self.policy_commands[command] = true;
        }
        let at = self.recent.len();
        self.denials.push(Denial { at, target, key });
    }

    /// How many denials were recorded since the last `settle`.
    pub fn recent_denials(&self) -> usize {
        self.denials.len()
    }

    /// Command `command`'s summary as of the last settle.
    pub fn command_top(&self, command: usize) -> &Summary {
        &self.command_tops[command]
    }

    /// Policy `id`'s summary as of the last settle (`None`: no denial yet).
    pub fn policy_top(&self, id: u32) -> Option<&Summary> {
        self.policy_tops.get(&id)
    }

    /// Records a finished call of `command` made by policy `id`.
    pub fn record_policy(&mut self, command: usize, outcome: Outcome, by: ByPolicy) {
        self.policy_commands[command] = true;
        let at = self.recent.len();
        self.policy_calls.push(PolicyCall { at, by });
        self.record(command, outcome);
    }

    /// A policy was created: its tally starts at zero.
    pub fn add_policy(&mut self, id: u32) {
        self.policies.insert(id, PolicyTally::default());
    }

    /// A policy was deleted: its tally goes (its recent calls count nowhere).
    pub fn remove_policy(&mut self, id: u32) {
        self.policies.remove(&id);
        self.policy_tops.remove(&id);
    }

    /// Policy `id`'s tally (zero if not held): as of the last settle, plus its
    /// calls recorded since.
    pub fn policy_tally(&self, id: u32) -> PolicyTally {
        let Some(&settled) = self.policies.get(&id) else {
            return PolicyTally::default();
        };
        let mut out = settled;
        for call in self.policy_calls.iter().filter(|c| c.by.id == id) {
            out.add(
                self.recent[call.at].outcome,
                call.by.shadow,
                call.by.penalized,
            );
        }
        out
    }

    /// Records a finished call of command `command` (an index below `N`).
    pub fn record(&mut self, command: usize, outcome: Outcome) {
        debug_assert!(command < N && N <= 256);
        self.recent.push(Call {
            command: command as u8,
            outcome,
        });
    }

    /// How many calls were recorded since the last `settle`.
    pub fn recent(&self) -> usize {
        self.recent.len()
    }

    /// Folds the recent calls into the tallies, given Redis's `calls` for each
    /// command now: a command that Redis counted fewer calls of than were
    /// recorded since the last settle was reset, and keeps only its last
    /// `redis_calls` calls.
    pub fn settle(&mut self, redis_calls: [u64; N]) {
        if self.top_keys == 0 {
            // `RL.TOP` is off: nothing is kept.
            self.command_tops.iter_mut().for_each(Summary::clear);
            self.policy_tops.clear();
        }
        let mut recorded = [0u64; N];
        for call in self.recent.iter().filter(|c| c.outcome.is_call()) {
            recorded[call.command as usize] += 1;
        }
        // Per command, how many of its oldest recent calls came before a reset.
        let mut before_reset = [0u64; N];
        for (command, &now) in redis_calls.iter().enumerate() {
            let base = self.baseline[command];
            if now < base || now - base < recorded[command] {
                self.settled[command] = Tally::ZERO;
                self.command_tops[command].clear();
                if self.policy_commands[command] {
                    self.policies
                        .values_mut()
                        .for_each(|t| *t = PolicyTally::default());
                    self.policy_tops.clear();
                }
                before_reset[command] = recorded[command].saturating_sub(now);
                // Blocked calls settled earlier were made before the reset.
                for (c, stale) in self.pending.values_mut() {
                    *stale |= *c as usize == command;
                }
            }
            self.baseline[command] = now;
        }
        // The next policy call's and the next denial's places (one compare
        // each per call while there is none).
        let mut next_policy = 0;
        let mut policy_at = self.policy_calls.first().map_or(usize::MAX, |p| p.at);
        let denials = std::mem::take(&mut self.denials);
        let mut next_denial = 0;
        let mut denial_at = denials.first().map_or(usize::MAX, |d| d.at);
        for (at, call) in self.recent.iter().enumerate() {
            let command = call.command as usize;
            let counted = match call.outcome {
                // Completes a blocked call: one made before a reset belongs to no tally.
                Outcome::Late { token, .. } | Outcome::Abandoned(token) => {
                    self.pending.remove(&token) != Some((call.command, true))
                }
                outcome => {
                    let stale = before_reset[command] > 0;
                    before_reset[command] = before_reset[command].saturating_sub(1);
                    if let Outcome::Blocked(token) = outcome {
                        self.pending.insert(token, (call.command, stale));
                    }
                    !stale
                }
            };
            if counted {
                self.settled[command].add(call.outcome);
            }
            if policy_at == at {
                let p = &self.policy_calls[next_policy];
                next_policy += 1;
                policy_at = self
                    .policy_calls
                    .get(next_policy)
                    .map_or(usize::MAX, |p| p.at);
                if let (true, Some(t)) = (counted, self.policies.get_mut(&p.by.id)) {
                    t.add(call.outcome, p.by.shadow, p.by.penalized);
                }
            }
            while denial_at == at {
                let d = &denials[next_denial];
                next_denial += 1;
                denial_at = denials.get(next_denial).map_or(usize::MAX, |d| d.at);
                let summary = match (counted, d.target) {
                    (false, _) => continue,
                    (true, Target::Command) => &mut self.command_tops[command],
                    (true, Target::Policy(id)) if self.policies.contains_key(&id) => {
                        self.policy_tops.entry(id).or_default()
                    }
                    (true, Target::Policy(_)) => continue,
                };
                summary.add(&d.key, self.top_keys);
            }
        }
        // The denials' room is kept (names are freed), at most as the calls'.
        self.denials = denials;
        self.denials.clear();
        self.denials.shrink_to(KEPT_CAPACITY);
        self.recent.clear();
        self.policy_calls.clear();
        self.policy_calls.shrink_to(KEPT_CAPACITY);
        // A burst between two settles (a pipelined flood) leaves no memory behind.
        self.recent.shrink_to(KEPT_CAPACITY);
    }

    /// The tallies: as of the last settle, plus the calls recorded since.
    pub fn tallies(&self) -> [Tally; N] {
        let mut out = self.settled;
        for call in &self.recent {
            out[call.command as usize].add(call.outcome);
        }
        out
    }
}

#[cfg(test)]
#[path = "ledger_tests.rs"]
mod tests;
