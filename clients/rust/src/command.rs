//! Each call as the module's command and as the Functions library's `FCALL`, with its reply.
//!
//! The two backends take the same words after the key: `RL.<ALGO> key params` is `FCALL
//! rl_<algo> 1 key params`, `RL.ALL numkeys keys clauses` is `FCALL rl_all numkeys keys
//! clauses`, `RL.PEEK ALGO key params` is `FCALL_RO rl_peek 1 key ALGO params`. A server-side
//! policy is `RL.LIMIT key name [options]`, `RL.PEEK POLICY key name [COST n]` and the `RL.ALL`
//! clause `POLICY name [COST n]`. Nothing here talks to a server.

use redis::Value;

use crate::decision::{AllDecision, Backend, Decision};
use crate::error::{Error, Result};
use crate::facts::{KindFacts, KINDS, MAX_DEBT};
use crate::policy::Policy;

/// How a reply is read.
#[derive(Clone, Debug)]
pub(crate) enum Decode {
    One {
        policy: Option<Policy>,
        known_shadowed: Option<bool>,
    },
    All {
        policies: Vec<Policy>,
        never_denied: Vec<bool>,
    },
    Bool,
    Line,
}

/// What a command's reply becomes.
#[derive(Clone, Debug)]
pub(crate) enum Reply {
    One(Decision),
    All(AllDecision),
    Bool(bool),
    Line(Option<String>),
}

/// How the module's command line is laid out around the keys.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Layout {
    /// `head key... rest...` (`head rest...` without keys).
    Keyed,
    /// `head numkeys key... rest...` (`RL.ALL`).
    Counted,
    /// `head rest[0] key... rest[1..]...` (`RL.PEEK`: the algorithm's word before the key).
    WordFirst,
}

/// One call: the module's command line is `head` and the words laid out by `layout`; the
/// library's is `FCALL[_RO] function numkeys keys... rest`. Each is written straight into the
/// `redis::Cmd` sent (no line of its own).
#[derive(Clone, Debug)]
pub(crate) struct Command {
    pub head: &'static str,
    pub layout: Layout,
    pub function: &'static str,
    pub keys: Vec<String>,
    /// The policy whose words (its penalty's too) follow the keys, before `rest`: a
    /// decision's, written from the policy itself.
    pub policy: Option<Policy>,
    pub rest: Vec<String>,
    pub decode: Decode,
    pub read_only: bool,
    /// The key whose node the call goes to, where it is not `keys[0]` (a call without keys).
    pub route: Option<String>,
}

fn args<'a>(cmd: &mut redis::Cmd, words: impl IntoIterator<Item = &'a String>) {
    for w in words {
        cmd.arg(w.as_bytes());
    }
}

impl Command {
    pub fn node_key(&self) -> &str {
        self.route
            .as_deref()
            .unwrap_or_else(|| self.keys.first().map_or("", String::as_str))
    }

    /// An empty command with room for this call's words (one allocation per buffer rather
    /// than a buffer grown word by word), starting with `head`.
    fn sized(&self, head: &str) -> redis::Cmd {
        let words: usize = self.keys.iter().chain(&self.rest).map(String::len).sum();
        let mut cmd = redis::Cmd::with_capacity(
            self.keys.len() + self.rest.len() + 12,
            words + head.len() + self.function.len() + 96,
        );
        cmd.arg(head);
        cmd
    }

    /// The module's command.
    pub fn module(&self) -> redis::Cmd {
        let mut cmd = self.sized(self.head);
        match self.layout {
            Layout::Keyed => {
                args(&mut cmd, &self.keys);
                self.policy_words(&mut cmd);
                args(&mut cmd, &self.rest);
            }
            Layout::Counted => {
                cmd.arg(self.keys.len());
                args(&mut cmd, &self.keys);
                args(&mut cmd, &self.rest);
            }
            Layout::WordFirst => {
                args(&mut cmd, self.rest.first());
                args(&mut cmd, &self.keys);
                args(&mut cmd, self.rest.iter().skip(1));
            }
        }
        cmd
    }

    /// The library's: `FCALL[_RO] function numkeys keys... rest`.
    pub fn library(&self) -> redis::Cmd {
        let mut cmd = self.sized(if self.read_only { "FCALL_RO" } else { "FCALL" });
        cmd.arg(self.function).arg(self.keys.len());
        args(&mut cmd, &self.keys);
        self.policy_words(&mut cmd);
        args(&mut cmd, &self.rest);
        cmd
    }

    fn policy_words(&self, cmd: &mut redis::Cmd) {
        if let Some(policy) = &self.policy {
            policy.write_words(cmd);
        }
    }

    /// Whether redis-rs's cluster client would route the module's command by the wrong
    /// argument (`RL.ALL`'s keys follow a count; `RL.POLICY GET name` has none): sent to its
    /// key's node instead.
    pub fn routed_by_us(&self) -> bool {
        matches!(self.head, "RL.ALL" | "RL.POLICY")
    }

    pub fn decode(&self, reply: Value, backend: Backend) -> Result<Reply> {
        Ok(match &self.decode {
            Decode::One {
                policy,
                known_shadowed,
            } => Reply::One(Decision::from_reply(
                five(&reply)?,
                backend,
                policy.clone(),
                *known_shadowed,
            )),
            Decode::All {
                policies,
                never_denied,
            } => {
                let items = array(&reply)?;
                let head = five(&reply)?;
                let per = items.get(5).map(array).transpose()?.unwrap_or_default();
                let mut layers = Vec::with_capacity(per.len());
                let mut index = None;
                for (i, r) in per.iter().enumerate() {
                    let r = five(r)?;
                    if index.is_none() && r == head {
                        index = Some(i);
                    }
                    let known = never_denied
                        .get(i)
                        .copied()
                        .unwrap_or(false)
                        .then_some(false);
                    layers.push(Decision::from_reply(
                        r,
                        backend,
                        policies.get(i).cloned(),
                        known,
                    ));
                }
                let index = index.ok_or_else(|| unexpected(&reply))?;
                Reply::All(AllDecision {
                    binding: layers[index].clone(),
                    layers: layers.into_iter().map(Some).collect(),
                    index,
                })
            }
            Decode::Bool => Reply::Bool(integer(&reply)? == 1),
            Decode::Line => Reply::Line(match reply {
                Value::Nil => None,
                Value::BulkString(b) => Some(String::from_utf8_lossy(&b).into_owned()),
                Value::SimpleString(s) | Value::VerbatimString { text: s, .. } => Some(s),
                other => return Err(unexpected(&other)),
            }),
        })
    }
}

fn unexpected(reply: &Value) -> Error {
    Error::Redis(redis::RedisError::from((
        redis::ErrorKind::UnexpectedReturnType,
        "unexpected reply",
        format!("{reply:?}"),
    )))
}

pub(crate) fn integer(v: &Value) -> Result<i64> {
    match v {
        Value::Int(n) => Ok(*n),
        Value::BulkString(b) => std::str::from_utf8(b)
            .ok()
            .and_then(|s| s.parse().ok())
            .ok_or_else(|| unexpected(v)),
        Value::SimpleString(s) => s.parse().map_err(|_| unexpected(v)),
        Value::Boolean(b) => Ok(i64::from(*b)),
        _ => Err(unexpected(v)),
    }
}

pub(crate) fn array(v: &Value) -> Result<&[Value]> {
    match v {
        Value::Array(items) | Value::Set(items) => Ok(items),
        _ => Err(unexpected(v)),
    }
}

fn five(v: &Value) -> Result<[i64; 5]> {
    let items = array(v)?;
    if items.len() < 5 {
        return Err(unexpected(v));
    }
    let mut out = [0; 5];
    for (o, item) in out.iter_mut().zip(items) {
        *o = integer(item)?;
    }
    Ok(out)
}

/// `COST n`, or nothing for the default 1.
fn cost_words(cost: u64) -> Vec<String> {
    if cost == 1 {
        vec![]
    } else {
        vec!["COST".into(), cost.to_string()]
    }
}

/// A call's options after the policy.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Options {
    pub cost: u64,
    pub refund: Option<u64>,
    pub debit: Option<u64>,
    pub peek: bool,
    pub block_ms: Option<u64>,
}

impl Options {
    fn words(&self) -> Vec<String> {
        let mut out = cost_words(self.cost);
        if let Some(n) = self.refund {
            out = vec!["REFUND".into(), n.to_string()];
        }
        if let Some(n) = self.debit {
            out = vec!["DEBIT".into(), n.to_string()];
        }
        if self.peek {
            out.push("PEEK".into());
        }
        if let Some(ms) = self.block_ms {
            out.extend(["BLOCK".into(), ms.to_string()]);
        }
        out
    }
}

/// The facts of the algorithm `algo` (`GCRA`, ...): its command (`RL.GCRA`) and function.
fn kind_of(algo: &str) -> Result<&'static KindFacts> {
    KINDS
        .iter()
        .find(|k| k.algo == algo)
        .ok_or_else(|| Error::refused(format!("no such algorithm: {algo}")))
}

fn checked(policy: &Policy) -> Result<()> {
    policy.check()?;
    if policy.is_shadow() {
        return Err(Error::refused(
            "SHADOW is a server-side policy's: define it (Limiter::define) and call it by name",
        ));
    }
    Ok(())
}

/// `RL.<ALGO> key params [PENALTY ...] [COST n | REFUND n | DEBIT n] [PEEK] [BLOCK ms]`, or
/// `RL.LIMIT key name [options]`.
pub(crate) fn decide(key: &str, policy: &Policy, options: Options) -> Result<Command> {
    checked(policy)?;
    let rest = options.words();
    let (head, function) = if policy.is_named() {
        ("RL.LIMIT", "rl_limit")
    } else {
        let kind = kind_of(policy.algo())?;
        (kind.label, kind.fcall)
    };
    let never_denied = (options.refund.is_some() || options.debit.is_some()).then_some(false);
    Ok(Command {
        head,
        layout: Layout::Keyed,
        function,
        keys: vec![key.to_string()],
        policy: Some(policy.clone()),
        rest,
        decode: Decode::One {
            policy: Some(policy.clone()),
            known_shadowed: never_denied,
        },
        read_only: false,
        route: None,
    })
}

/// `RL.PEEK ALGO key params [COST n]` (`RL.PEEK POLICY key name [COST n]`): read-only.
pub(crate) fn peek(key: &str, policy: &Policy, cost: u64) -> Result<Command> {
    checked(policy)?;
    let mut rest = vec![policy.algo().to_string()];
    rest.extend(policy.words(false));
    rest.extend(cost_words(cost));
    Ok(Command {
        head: "RL.PEEK",
        layout: Layout::WordFirst,
        function: "rl_peek",
        keys: vec![key.to_string()],
        policy: None,
        rest,
        decode: Decode::One {
            policy: Some(policy.clone()),
            known_shadowed: None,
        },
        read_only: true,
        route: None,
    })
}

/// `RL.ALL numkeys key... clause [options] ... [PEEK]`, each layer's clause followed by its
/// options (`COST n`, `REFUND n`, `DEBIT n` or nothing).
pub(crate) fn all_clauses(
    layers: &[(String, Policy)],
    options: &[Vec<String>],
    peek: bool,
) -> Result<Command> {
    if layers.is_empty() {
        return Err(Error::refused(
            "decide_all needs at least one (key, policy) layer",
        ));
    }
    let mut rest = Vec::new();
    for ((_, policy), opts) in layers.iter().zip(options) {
        checked(policy)?;
        rest.push(policy.algo().to_string());
        rest.extend(policy.words(true));
        rest.extend(opts.iter().cloned());
    }
    if peek {
        rest.push("PEEK".into());
    }
    let keys: Vec<String> = layers.iter().map(|(k, _)| k.clone()).collect();
    let never_denied = options
        .iter()
        .map(|o| o.iter().any(|w| w == "REFUND" || w == "DEBIT"))
        .collect();
    Ok(Command {
        head: "RL.ALL",
        layout: Layout::Counted,
        function: "rl_all",
        keys,
        policy: None,
        rest,
        decode: Decode::All {
            policies: layers.iter().map(|(_, p)| p.clone()).collect(),
            never_denied,
        },
        read_only: false,
        route: None,
    })
}

/// `RL.ALL` with a cost per layer.
pub(crate) fn all_of(layers: &[(String, Policy, u64)], peek: bool) -> Result<Command> {
    let pairs: Vec<(String, Policy)> = layers
        .iter()
        .map(|(k, p, _)| (k.clone(), p.clone()))
        .collect();
    let costs: Vec<Vec<String>> = layers.iter().map(|(_, _, c)| cost_words(*c)).collect();
    all_clauses(&pairs, &costs, peek)
}

/// What settles a reservation that spent `difference` too few units (too many, when
/// negative): `DEBIT d` (at most MAX_DEBT), `REFUND -d`, or nothing for 0.
pub(crate) fn settle_options(difference: i128) -> Vec<String> {
    if difference > 0 {
        vec![
            "DEBIT".into(),
            difference.min(i128::from(MAX_DEBT)).to_string(),
        ]
    } else if difference < 0 {
        vec!["REFUND".into(), (-difference).to_string()]
    } else {
        vec![]
    }
}

/// `RL.POLICY GET name` (`FCALL_RO rl_policy 0 GET name`), from the node holding `key`.
pub(crate) fn policy_definition(key: &str, name: &str) -> Command {
    Command {
        head: "RL.POLICY",
        layout: Layout::Keyed,
        function: "rl_policy",
        keys: vec![],
        policy: None,
        rest: vec!["GET".into(), name.into()],
        decode: Decode::Line,
        read_only: true,
        route: Some(key.to_string()),
    }
}

/// `RL.BAN key ms` (`FCALL rl_ban 1 key ms`): true if the key existed.
pub(crate) fn ban(key: &str, ms: u64) -> Command {
    Command {
        head: "RL.BAN",
        layout: Layout::Keyed,
        function: "rl_ban",
        keys: vec![key.into()],
        policy: None,
        rest: vec![ms.to_string()],
        decode: Decode::Bool,
        read_only: false,
        route: None,
    }
}

/// `RL.ACQUIRE key limit timeout lease_id [PEEK]`.
pub(crate) fn acquire(key: &str, limit: u64, timeout: &str, lease_id: &str, peek: bool) -> Command {
    let mut rest = vec![limit.to_string(), timeout.to_string(), lease_id.to_string()];
    if peek {
        rest.push("PEEK".into());
    }
    Command {
        head: "RL.ACQUIRE",
        layout: Layout::Keyed,
        function: "rl_acquire",
        keys: vec![key.into()],
        policy: None,
        rest,
        decode: Decode::One {
            policy: None,
            known_shadowed: None,
        },
        read_only: false,
        route: None,
    }
}

/// `RL.RELEASE key lease_id`: true if the lease was held.
pub(crate) fn release(key: &str, lease_id: &str) -> Command {
    Command {
        head: "RL.RELEASE",
        layout: Layout::Keyed,
        function: "rl_release",
        keys: vec![key.into()],
        policy: None,
        rest: vec![lease_id.into()],
        decode: Decode::Bool,
        read_only: false,
        route: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each call's module and library lines, as sent.
    fn lines(cmd: &Command) -> (String, String) {
        let text = |c: redis::Cmd| {
            c.args_iter()
                .map(|a| match a {
                    redis::Arg::Simple(b) => String::from_utf8_lossy(b).into_owned(),
                    _ => "<not simple>".into(),
                })
                .collect::<Vec<_>>()
                .join(" ")
        };
        (text(cmd.module()), text(cmd.library()))
    }

    #[test]
    fn command_lines() {
        let gcra = Policy::gcra(10, "1s").burst(5);
        let cmd = decide(
            "k",
            &gcra,
            Options {
                cost: 3,
                ..Options::default()
            },
        )
        .unwrap();
        assert_eq!(
            lines(&cmd),
            (
                "RL.GCRA k 10 1s BURST 5 COST 3".into(),
                "FCALL rl_gcra 1 k 10 1s BURST 5 COST 3".into()
            )
        );
        let named = decide(
            "k",
            &Policy::named("free"),
            Options {
                cost: 1,
                ..Options::default()
            },
        )
        .unwrap();
        assert_eq!(
            lines(&named),
            ("RL.LIMIT k free".into(), "FCALL rl_limit 1 k free".into())
        );
        let cmd = peek("k", &Policy::sliding(100, "1m"), 2).unwrap();
        assert_eq!(
            lines(&cmd),
            (
                "RL.PEEK SLIDING k 100 1m COST 2".into(),
                "FCALL_RO rl_peek 1 k SLIDING 100 1m COST 2".into()
            )
        );
        let layers = [
            ("a".to_string(), Policy::fixed(5, "1m"), 1),
            ("b".to_string(), Policy::named("free"), 2),
        ];
        let cmd = all_of(&layers, true).unwrap();
        assert_eq!(
            lines(&cmd),
            (
                "RL.ALL 2 a b FIXED 5 1m POLICY free COST 2 PEEK".into(),
                "FCALL rl_all 2 a b FIXED 5 1m POLICY free COST 2 PEEK".into()
            )
        );
        assert!(cmd.routed_by_us());
        let cmd = policy_definition("k", "free");
        assert_eq!(
            lines(&cmd),
            (
                "RL.POLICY GET free".into(),
                "FCALL_RO rl_policy 0 GET free".into()
            )
        );
        assert_eq!(cmd.node_key(), "k");
        assert_eq!(lines(&ban("k", 10)).0, "RL.BAN k 10");
        assert_eq!(
            lines(&acquire("k", 3, "10s", "l1", true)),
            (
                "RL.ACQUIRE k 3 10s l1 PEEK".into(),
                "FCALL rl_acquire 1 k 3 10s l1 PEEK".into()
            )
        );
        assert_eq!(lines(&release("k", "l1")).0, "RL.RELEASE k l1");
        for k in KINDS {
            assert_eq!(k.label, format!("RL.{}", k.algo));
        }
    }
}
