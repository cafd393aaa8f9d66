//! The named policies this node holds (`RL.POLICY`), in module memory on the
//! main thread: never replicated, never in RDB or AOF. At most
//! `rl.max-policies` exist; each keeps its definition's words, so `GET`,
//! `LIST` and `DIGEST` give them as a policy file holds them, and a policy
//! parsed under other caps (`rl.sliding-log-max-limit` changed since) is
//! parsed again when used, so it decides under the bounds its command would.
//! The policy file (`rl.policy-file`) is read as Redis reads an ACL file: all
//! or nothing, the first bad line named; it is replaced whole through a
//! temporary file (`file`). Whatever `SAVE` writes, the next start loads: at
//! start the file is read against the largest values the settings can take,
//! as Redis loads the RDB it wrote whatever `maxmemory` says by then.

mod file;

use std::cell::RefCell;
use std::collections::BTreeMap;

use crate::config::{self, Caps};
use crate::error::RlError;
use crate::facts::{messages, MAX_POLICY_LINE};
use crate::grammar::policy::{canonical, parse_definition, policy_name, Definition};
use crate::observe::{self, stats};

struct Policy {
    /// Names its counters (`INFO rl_policies`): kept while the name is held,
    /// whatever it is redefined as; a new name gets a new id.
    id: u32,
    /// The words after the name, as a policy file holds them.
    text: String,
    definition: Definition,
    /// The caps `definition` was parsed under.
    caps: Caps,
}

impl Policy {
    /// Its definition under `caps`: parsed again if they are not the caps it
    /// was parsed under, so it decides under the bounds its command would.
    fn definition_under(&self, caps: Caps) -> Result<Definition, RlError> {
        if self.caps == caps {
            return Ok(self.definition);
        }
        let words: Vec<&[u8]> = self.text.split(' ').map(str::as_bytes).collect();
        parse_definition(&words, caps)
    }
}

thread_local! {
    /// By name: `LIST` is sorted by name.
    static POLICIES: RefCell<BTreeMap<String, Policy>> = const { RefCell::new(BTreeMap::new()) };
    /// `DIGEST` of `POLICIES`, once computed; cleared by every change, so `INFO`
    /// and `DIGEST` cost one hash per change, not one per call.
    static DIGEST: RefCell<Option<String>> = const { RefCell::new(None) };
    /// The id of the next policy created.
    static NEXT_ID: std::cell::Cell<u32> = const { std::cell::Cell::new(0) };
}

/// A new policy's id, its counters started.
fn new_id() -> u32 {
    let id = NEXT_ID.with(|n| n.replace(n.get().wrapping_add(1)));
    stats::policy_added(id);
    id
}

/// The set changed: its digest is computed again when next asked.
fn changed() {
    DIGEST.with_borrow_mut(|d| *d = None);
}

/// `RL.POLICY SET name words...`: creates or replaces a policy (not with
/// another algorithm: its keys hold the old one's state).
pub fn set(name: &[u8], words: &[&[u8]], caps: Caps) -> Result<(), RlError> {
    POLICIES.with_borrow_mut(|policies| {
        let (name, mut policy) = parse(name, words, caps)?;
        admit(
            policies,
            policies,
            name,
            &policy.definition,
            config::max_policies(),
        )?;
        policy.id = policies.get(name).map_or_else(new_id, |old| old.id);
        policies.insert(name.to_owned(), policy);
        changed();
        Ok(())
    })
}

/// A policy from its name and definition's words.
fn parse<'a>(name: &'a [u8], words: &[&[u8]], caps: Caps) -> Result<(&'a str, Policy), RlError> {
    let name = policy_name(name)?;
    if observe::is_reserved_policy_name(name) {
        return Err(RlError::PolicyReserved(name.to_owned()));
    }
    // Its line as `GET`, `LIST` and `SAVE` give it: what a policy file may hold.
    let line = name.len() + words.iter().map(|w| 1 + w.len()).sum::<usize>();
    if line > MAX_POLICY_LINE {
        return Err(RlError::Syntax(messages::POLICY_LONG));
    }
    let definition = parse_definition(words, caps)?;
    let text = canonical(words);
    Ok((
        name,
        Policy {
            id: u32::MAX, // given when the policy is kept
            text,
            definition,
            caps,
        },
    ))
}

/// Whether `name` may be defined as `definition` in `into`: not with another
/// algorithm than `held` gives it, and within `max` policies.
fn admit(
    held: &BTreeMap<String, Policy>,
    into: &BTreeMap<String, Policy>,
    name: &str,
    definition: &Definition,
    max: usize,
) -> Result<(), RlError> {
    if let Some(old) = held
        .get(name)
        .filter(|old| old.definition.kind != definition.kind)
    {
        return Err(RlError::PolicyAlgorithm {
            name: name.to_owned(),
            was: old.definition.kind.tag_upper(),
        });
    }
    if !into.contains_key(name) && into.len() >= max {
        return Err(RlError::TooManyPolicies(max));
    }
    Ok(())
}

/// How a policy file is read.
#[derive(Clone, Copy)]
enum Reading {
    /// At start: against the largest values the settings can take, so that
    /// whatever `SAVE` wrote under settings changed since (and not saved) loads.
    AtStart,
    /// `RL.POLICY LOAD`: a change made now, held to the settings in force.
    Now,
}

/// Reads the policy file at load: a file given and not readable, or with a bad
/// line, refuses the load (the message names the file and the line). `Ok`
/// holds the warnings to log: what the settings in force would have refused.
pub fn load_at_start() -> Result<Vec<String>, String> {
    match read_file(Reading::AtStart) {
        Ok(warnings) => Ok(warnings),
        Err(RlError::NoPolicyFile) => Ok(Vec::new()),
        Err(e) => Err(e.to_string().trim_start_matches("ERR ").to_owned()),
    }
}

/// `RL.POLICY LOAD`: replaces the set by the policy file's, all or nothing.
pub fn load() -> Result<(), RlError> {
    read_file(Reading::Now).map(|_| ())
}

/// Replaces the set by the policy file's, all or nothing; the warnings of a
/// start (see [`load_at_start`]).
fn read_file(reading: Reading) -> Result<Vec<String>, RlError> {
    let path = config::policy_file().ok_or_else(|| RlError::NoPolicyFile)?;
    let file = path.display().to_string();
    let text = file::read(&path).map_err(|problem| RlError::PolicyFile {
        file: file.as_str().into(),
        problem: problem.into(),
    })?;
    let (caps, max) = match reading {
        Reading::Now => (config::caps(), config::max_policies()),
        Reading::AtStart => (config::widest_caps(), config::MAX_POLICIES_RANGE.1 as usize),
    };
    let mut warnings = Vec::new();
    let read = POLICIES.with_borrow(|held| {
        let mut read = BTreeMap::new();
        for (i, line) in text.split(|&b| b == b'\n').enumerate() {
            let at_line = |e: RlError| RlError::PolicyFileLine {
                file: file.as_str().into(),
                line: i + 1,
                problem: e.to_string().trim_start_matches("ERR ").into(),
            };
            let policy = read_line(held, &mut read, line, caps, max).map_err(at_line)?;
            if let Some((name, Err(refused))) = policy.map(|name| (name, usable(&read, name))) {
                warnings.push(format!(
                    "policy file {file} line {}: policy '{name}' is loaded, but calls by it \
                     are refused until the settings allow it: {}",
                    i + 1,
                    refused.to_string().trim_start_matches("ERR ")
                ));
            }
        }
        Ok(read)
    })?;
    if read.len() > config::max_policies() {
        warnings.push(format!(
            "policy file {file} holds {} policies, more than rl.max-policies ({}): all are \
             loaded; RL.POLICY SET of a new name is refused until fewer are held",
            read.len(),
            config::max_policies()
        ));
    }
    POLICIES.with_borrow_mut(|policies| {
        let mut read = read;
        // Names kept keep their counters; the others' go, new ones' start.
        for (name, policy) in read.iter_mut() {
            policy.id = policies.get(name).map_or_else(new_id, |old| old.id);
        }
        for (name, policy) in policies.iter() {
            if !read.contains_key(name) {
                stats::policy_removed(policy.id);
            }
        }
        *policies = read;
    });
    changed();
    Ok(warnings)
}

/// Whether the policy `name` of `read` decides under the settings in force.
fn usable(read: &BTreeMap<String, Policy>, name: &str) -> Result<(), RlError> {
    read.get(name)
        .map_or(Ok(()), |p| p.definition_under(config::caps()).map(|_| ()))
}

/// One line of a policy file into `read`: `name ALGO params [SHADOW]`, or a
/// blank line, or a `#` comment. The name of the policy read, if any.
fn read_line<'a>(
    held: &BTreeMap<String, Policy>,
    read: &mut BTreeMap<String, Policy>,
    line: &'a [u8],
    caps: Caps,
    max: usize,
) -> Result<Option<&'a str>, RlError> {
    if line.len() > MAX_POLICY_LINE {
        return Err(RlError::Syntax(messages::POLICY_LINE_LONG));
    }
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    let mut words = line
        .split(u8::is_ascii_whitespace)
        .filter(|w| !w.is_empty());
    let Some(name) = words.next().filter(|w| !w.starts_with(b"#")) else {
        return Ok(None);
    };
    let words: Vec<&[u8]> = words.collect();
    // Parsed under the settings in force where it can be, so that a call by it
    // need not parse it again.
    let (name, policy) =
        parse(name, &words, config::caps()).or_else(|e| match caps == config::caps() {
            true => Err(e),
            false => parse(name, &words, caps),
        })?;
    if read.contains_key(name) {
        return Err(RlError::Syntax(messages::POLICY_TWICE));
    }
    admit(held, read, name, &policy.definition, max)?;
    read.insert(name.to_owned(), policy);
    Ok(Some(name))
}

/// `RL.POLICY SAVE`: writes `LIST`'s lines to the policy file (`file::replace`).
pub fn save() -> Result<(), RlError> {
    let path = config::policy_file().ok_or_else(|| RlError::NoPolicyFile)?;
    let mut text = String::new();
    for line in list() {
        text.push_str(&line);
        text.push('\n');
    }
    file::replace(&path, text.as_bytes()).map_err(|problem| RlError::PolicyFile {
        file: path.display().to_string().into(),
        problem: problem.into(),
    })
}

/// `RL.POLICY DEL name`: whether it existed.
pub fn delete(name: &[u8]) -> Result<bool, RlError> {
    let name = policy_name(name)?;
    let deleted = POLICIES.with_borrow_mut(|policies| policies.remove(name));
    if let Some(policy) = &deleted {
        stats::policy_removed(policy.id);
    }
    changed();
    Ok(deleted.is_some())
}

/// `RL.POLICY GET name`: its line as a policy file holds it.
pub fn get(name: &[u8]) -> Result<Option<String>, RlError> {
    let name = policy_name(name)?;
    Ok(POLICIES.with_borrow(|policies| policies.get(name).map(|p| line(name, p))))
}

/// `RL.POLICY LIST`: every policy's line, sorted by name.
pub fn list() -> Vec<String> {
    POLICIES.with_borrow(|policies| policies.iter().map(|(n, p)| line(n, p)).collect())
}

/// `RL.POLICY DIGEST`: the SHA-1 of `LIST`'s lines, each ended by `\n`, in
/// hex: equal on nodes holding the same set.
pub fn digest() -> String {
    if let Some(digest) = DIGEST.with_borrow(Clone::clone) {
        return digest;
    }
    let mut sha = sha1_smol::Sha1::new();
    for line in list() {
        sha.update(line.as_bytes());
        sha.update(b"\n");
    }
    let digest = sha.digest().to_string();
    DIGEST.with_borrow_mut(|d| *d = Some(digest.clone()));
    digest
}

/// `INFO rl`'s `policies` and `policy_digest`; `None` while the set is being
/// changed (a crash report written mid-change).
pub fn held() -> Option<(usize, String)> {
    let count = POLICIES.with(|p| p.try_borrow().map(|p| p.len()).ok())?;
    let cached = DIGEST.with(|d| d.try_borrow().ok().map(|d| d.clone()))?;
    Some((count, cached.unwrap_or_else(digest)))
}

/// The policy `name` decides by, under `caps` (an `RL.ALL` clause: the call
/// is `RL.ALL`'s, counted as no policy's).
pub fn lookup(name: &[u8], caps: Caps) -> Result<Definition, RlError> {
    find(name, caps, false)
}

/// [`lookup`] for a call by one policy (`RL.LIMIT`, `RL.PEEK POLICY`): the
/// call in progress is counted as the policy's (`INFO rl_policies`).
pub fn lookup_counted(name: &[u8], caps: Caps) -> Result<Definition, RlError> {
    find(name, caps, true)
}

fn find(name: &[u8], caps: Caps, counted: bool) -> Result<Definition, RlError> {
    let name = policy_name(name)?;
    POLICIES.with_borrow(|policies| {
        let policy = policies
            .get(name)
            .ok_or_else(|| RlError::NoSuchPolicy(name.to_owned()))?;
        if counted {
            stats::by_policy(policy.id, policy.definition.shadow);
        }
        policy.definition_under(caps)
    })
}

/// A policy as a waiting call holds it: by name and id, so a policy deleted
/// (and perhaps made again under its name) is one it no longer finds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PolicyRef {
    pub name: String,
    pub id: u32,
}

/// The held policy `name`, as a waiting call holds it (`RL.LIMIT … BLOCK`).
pub fn reference(name: &[u8]) -> Result<PolicyRef, RlError> {
    let name = policy_name(name)?;
    let id = POLICIES.with_borrow(|p| p.get(name).map(|policy| policy.id));
    let id = id.ok_or_else(|| RlError::NoSuchPolicy(name.to_owned()))?;
    Ok(PolicyRef {
        name: name.to_owned(),
        id,
    })
}

/// The policy `by` names as it is now, under `caps` (a waiter decides by its
/// policy as it is when woken); `ERR no such policy` once it was deleted.
pub fn current(by: &PolicyRef, caps: Caps) -> Result<Definition, RlError> {
    let gone = || RlError::NoSuchPolicy(by.name.clone());
    POLICIES.with_borrow(|policies| {
        let policy = policies
            .get(&by.name)
            .filter(|p| p.id == by.id)
            .ok_or_else(gone)?;
        policy.definition_under(caps)
    })
}

/// Every policy's name and counters' id, sorted by name (`INFO rl_policies`).
pub fn counted() -> Vec<(String, u32)> {
    POLICIES.with(|p| match p.try_borrow() {
        Ok(p) => p
            .iter()
            .map(|(name, policy)| (name.clone(), policy.id))
            .collect(),
        Err(_) => Vec::new(),
    })
}

fn line(name: &str, policy: &Policy) -> String {
    format!("{name} {}", policy.text)
}
