//! Lease decisions on a key (`RL.ACQUIRE`, `RL.RELEASE`): the pure rules of
//! [`crate::algorithm::lease`] on the key's lease set.
//!
//! State: a sorted set, member `lease:<lease_id>`, score the lapse time in
//! microseconds since the epoch (see `store::LEASE_PREFIX`).

use crate::algorithm::expire_ms;
use crate::algorithm::lease::{
    lapse_ns, release, us_of, Lease, LeaseView, LeaseWrite, ReleaseWrite, Released,
};
use crate::algorithm::Outcome;
use crate::error::RlError;
use crate::store::{Held, Key};

/// Decides acquiring lease `member` (prefixed) on `key` at `now`, writing nothing.
pub fn decide_acquire(
    key: &Key,
    lease: &Lease,
    member: &[u8],
    now: u64,
) -> Result<Outcome<LeaseWrite>, RlError> {
    with_leases(key, |view| lease.acquire(view, now, member))
}

/// True if lease `member` is held at `now` (acquiring it again is a renewal).
pub fn is_held(key: &Key, member: &[u8], now: u64) -> Result<bool, RlError> {
    with_leases(key, |view| {
        view.lapse_of(member).is_some_and(|l| l > us_of(now))
    })
}

/// Applies an admitted acquisition, replicating its effect.
pub fn commit_acquire(key: &Key, member: &[u8], write: &LeaseWrite) {
    key.write_lease(member, write, expire_ms(lapse_ns(write.latest_us)));
}

/// Releases lease `member` at `now`: whether it was held; the key is written
/// (and its effect replicated) if anything changed.
pub fn release_lease(key: &Key, member: &[u8], now: u64) -> Result<Released, RlError> {
    let released = with_leases(key, |view| release(view, now, member))?;
    match released.write {
        None => {}
        Some(ReleaseWrite::Delete) => key.delete(),
        Some(ReleaseWrite::Remove {
            cutoff_us,
            latest_us,
        }) => key.release_lease(member, cutoff_us, expire_ms(lapse_ns(latest_us))),
    }
    Ok(released)
}

/// Runs `f` on the key's leases: none if it is empty; an error, leaving the key
/// untouched, if it holds anything but a lease set. If the key vanished during
/// a count (see `store::Key`), `f` runs again on the now-absent key.
fn with_leases<T>(key: &Key, f: impl Fn(&dyn LeaseView) -> T) -> Result<T, RlError> {
    key.settled(|| leases_once(key, &f))
}

fn leases_once<T>(key: &Key, f: &impl Fn(&dyn LeaseView) -> T) -> Result<T, RlError> {
    match key.held() {
        Held::Empty => Ok(f(&NoLeases)),
        Held::Zset => {
            let leases = key
                .as_leases()
                .ok_or_else(|| RlError::ForeignValue("RL.ACQUIRE"))?;
            Ok(f(&leases))
        }
        Held::String(_) | Held::ShortString | Held::Other => Err(RlError::WrongType),
    }
}

/// An absent lease set.
struct NoLeases;

impl LeaseView for NoLeases {
    fn held_at(&self, _: u64) -> u64 {
        0
    }
    fn lapse_of(&self, _: &[u8]) -> Option<u64> {
        None
    }
    fn nth_lapse_after(&self, _: u64, _: u64) -> Option<u64> {
        None
    }
    fn nth_latest(&self, _: u64) -> Option<u64> {
        None
    }
}
