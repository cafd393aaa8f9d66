//! The named policies this node holds (`RL.POLICY`), in module memory on the
//! main thread: never replicated, never in RDB or AOF. At most
//! `rl.max-policies` exist; each keeps its definition's words, so `GET`,
//! `LIST` and `DIGEST` give them as a policy file holds them, and a policy
//! parsed under other caps (`rl.sliding-log-max-limit` changed since) is
//! parsed again when used, so it decides under the bounds its command would.

use std::cell::RefCell;
use std::collections::BTreeMap;

use crate::config::{self, Caps};
use crate::error::RlError;
use crate::grammar::policy::{canonical, parse_definition, policy_name, Definition};

struct Policy {
    /// The words after the name, as a policy file holds them.
    text: String,
    definition: Definition,
    /// The caps `definition` was parsed under.
    caps: Caps,
}

thread_local! {
    /// By name: `LIST` is sorted by name.
    static POLICIES: RefCell<BTreeMap<String, Policy>> = const { RefCell::new(BTreeMap::new()) };
}

/// `RL.POLICY SET name words...`: creates or replaces a policy (not with
/// another algorithm: its keys hold the old one's state).
pub fn set(name: &[u8], words: &[&[u8]], caps: Caps) -> Result<(), RlError> {
    let name = policy_name(name)?;
    let definition = parse_definition(words, caps)?;
    POLICIES.with_borrow_mut(|policies| {
        match policies.get(name) {
            Some(old) if old.definition.kind != definition.kind => {
                return Err(RlError::PolicyAlgorithm {
                    name: name.to_owned(),
                    was: old.definition.kind.tag_upper(),
                })
            }
            None if policies.len() >= config::max_policies() => {
                return Err(RlError::TooManyPolicies(config::max_policies()))
            }
            _ => {}
        }
        let policy = Policy {
            text: canonical(words),
            definition,
            caps,
        };
        policies.insert(name.to_owned(), policy);
        Ok(())
    })
}

/// `RL.POLICY DEL name`: whether it existed.
pub fn delete(name: &[u8]) -> Result<bool, RlError> {
    let name = policy_name(name)?;
    Ok(POLICIES.with_borrow_mut(|policies| policies.remove(name).is_some()))
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
    let mut sha = sha1_smol::Sha1::new();
    for line in list() {
        sha.update(line.as_bytes());
        sha.update(b"\n");
    }
    sha.digest().to_string()
}

/// The policy `name` decides by, under `caps`.
pub fn lookup(name: &[u8], caps: Caps) -> Result<Definition, RlError> {
    let name = policy_name(name)?;
    POLICIES.with_borrow(|policies| {
        let policy = policies
            .get(name)
            .ok_or_else(|| RlError::NoSuchPolicy(name.to_owned()))?;
        if policy.caps == caps {
            return Ok(policy.definition);
        }
        let words: Vec<&[u8]> = policy.text.split(' ').map(str::as_bytes).collect();
        parse_definition(&words, caps)
    })
}

fn line(name: &str, policy: &Policy) -> String {
    format!("{name} {}", policy.text)
}
