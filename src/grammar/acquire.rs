//! `RL.ACQUIRE key limit timeout lease_id [PEEK] [BLOCK ms]` and the lease id
//! `RL.RELEASE` takes.

use super::block::parse_block;
use super::scalars::{parse_count, parse_duration, set_once};
use crate::algorithm::lease::Lease;
use crate::bounds::{MAX_COUNT, MAX_LEASE_ID};
use crate::config::Caps;
use crate::error::{sanitize, RlError};
use crate::facts::messages;
use crate::units::Millis;

/// A parsed `RL.ACQUIRE` (the lease id is taken from the arguments as is).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Acquire {
    pub lease: Lease,
    pub peek: bool,
    /// `BLOCK ms`, if given.
    pub block: Option<Millis>,
}

/// Parses `limit timeout lease_id [PEEK] [BLOCK ms]` (the arguments after the
/// key): the parameters, then the options left to right. `limit` is capped
/// like `RL.SLIDINGLOG`'s (`rl.sliding-log-max-limit`): a lease set holds up
/// to `limit` members.
pub fn parse_acquire(params: &[&[u8]], caps: Caps) -> Result<Acquire, RlError> {
    let [limit, timeout, id, options @ ..] = params else {
        return Err(RlError::WrongArity("rl.acquire"));
    };
    // The limit is at least 1 by now: only the timeout can be refused.
    let lease = Lease::new(
        parse_count("limit", limit, caps.sliding_log_max.min(MAX_COUNT))?,
        parse_duration("timeout", timeout)?,
    )
    .ok_or_else(|| RlError::BadDuration("timeout"))?;
    check_id(id)?;
    let mut peek = false;
    let mut block = None;
    let mut rest = options.iter();
    while let Some(option) = rest.next() {
        if option.eq_ignore_ascii_case(b"PEEK") {
            if peek {
                return Err(RlError::RepeatedOption("PEEK"));
            }
            peek = true;
        } else if option.eq_ignore_ascii_case(b"BLOCK") {
            set_once(&mut block, "BLOCK", rest.next(), parse_block)?;
        } else {
            return Err(RlError::UnknownOption {
                option: sanitize(option),
                command: "rl.acquire",
                expected: "PEEK or BLOCK",
            });
        }
    }
    Ok(Acquire { lease, peek, block })
}

pub fn check_id(id: &[u8]) -> Result<(), RlError> {
    if (1..=MAX_LEASE_ID).contains(&id.len()) {
        Ok(())
    } else {
        Err(RlError::Syntax(messages::LEASE_ID))
    }
}

#[cfg(test)]
#[path = "acquire_tests.rs"]
mod tests;
