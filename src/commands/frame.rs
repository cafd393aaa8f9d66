//! The one-key spend most commands make. (The frame every handler runs in,
//! `handler!`, is the API layer's: `crate::server::handler`.)

use crate::algorithm::Decision;
use crate::decision::Claim;
use crate::error::RlError;
use crate::reply::Reply;
use crate::spend::{spend, Layer, Spend, Spent};
use crate::store::Key;

/// Spends `claim` on one key and replies with its five integers (or waits).
#[inline]
pub fn spend_one(key: Key, claim: Claim, now: u64, how: Spend) -> Result<Reply, RlError> {
    spend_one_as(key, claim, now, how, Decision::reply)
}

/// [`spend_one`], its decision replied as `reply` makes it (`GCRA`: seconds).
/// A call that waits is answered by the shared reply: only calls that never
/// wait may choose another.
#[inline]
pub fn spend_one_as(
    key: Key,
    claim: Claim,
    now: u64,
    how: Spend,
    reply: fn(&Decision) -> [i64; 5],
) -> Result<Reply, RlError> {
    let mut layers = [Layer::new(key, claim)];
    Ok(match spend(&mut layers, now, how)? {
        Spent::Blocked => Reply::Blocked,
        Spent::Decided => Reply::Decision(reply(layers[0].decision())),
    })
}
