//! The denial cache: once the server denies a layer's identity (a key and a policy) with a
//! `retry_after_ms` R > 0, that identity's calls are denied here, without a call, until R has
//! passed (as the Python and Node packages' caches).
//!
//! - Only a denial is written (`allowed` 0 and R > 0): never an admission, never a `SHADOW`
//!   policy's denial (which is admitted), never a request that can never be admitted (R = -1).
//! - An entry holds the denied cost: a call of a cost at least that one is denied from it (a
//!   larger cost is denied at least as long as a smaller one, by every limiter); a smaller
//!   cost is sent to the server, whose answer replaces the entry.
//! - The deadline counts from the moment the call was sent, not from when its reply came back,
//!   so the cache never denies past the server's own deadline.
//! - The decision it gives is the server's denial as it would be now: `allowed` false, the
//!   same `limit` and `remaining`, `retry_after_ms` and `reset_after_ms` counting down; its
//!   `cached` is true.
//! - Bounded: at most `max_entries`, the least recently used evicted first, and an expired
//!   entry dropped when it is met. A key longer than [`HELD_KEY_BYTES`] bytes is held as its
//!   SHA-256 digest, so an entry's size does not grow with its key's (a header-keyed layer's
//!   8 KB keys take no more than short ones).
//!
//! What it gives up: a `REFUND`, a raised policy or a lifted ban made elsewhere is seen at the
//! latest when R ends; the same limiter's own `refund` and `ban` drop the key's entries at once.
//!
//! With [`exhausted`](DenialCache::exhausted) on (off by default), an admission that left
//! nothing is written too: a spending call of a spelled-out policy without a penalty, admitted
//! with `remaining` 0, whose algorithm says from the reply when the next unit is free
//! ([`exhausted_wait`]). The calls until then are denied here, so a flooding identity's
//! denials never reach the server, not even the first after each admission; the server then
//! counts no denial of it (`INFO rl`, `RL.TOP`): only this process's counters do.

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write;
use std::sync::Mutex;
use std::time::Instant;

use sha2::{Digest, Sha256};

use crate::decision::{Backend, Decision};
use crate::policy::Policy;

/// Entries kept by default.
pub const DEFAULT_MAX_ENTRIES: usize = 10_000;

/// The longest key (in bytes) held as it is; a longer one is held as its digest.
pub const HELD_KEY_BYTES: usize = 64;

/// How the cache holds `key`: as it is up to [`HELD_KEY_BYTES`] bytes, else `"\u{1}"` and its
/// SHA-256 digest in hex (65 bytes, so never equal to a short key): what one entry holds is
/// bounded whatever the key's length.
fn held(key: &str) -> String {
    if key.len() <= HELD_KEY_BYTES {
        return key.to_string();
    }
    let mut out = String::with_capacity(1 + 64);
    out.push('\u{1}');
    for byte in Sha256::digest(key.as_bytes()).iter() {
        let _ = write!(out, "{byte:02x}");
    }
    out
}

/// For a spending admission of `policy` that left `remaining` 0: how long (ms, from the
/// call's send) every call of the same key and policy is denied, or None when the reply does
/// not say it (a sliding window, a server-side policy, a penalty: the denial that starts it
/// must reach the server) or when it is under 1 ms. With `T` the time one unit costs and
/// `limit` the burst (capacity), the next unit of GCRA, the token bucket and the leaky bucket
/// is free when the limiter is `(limit - 1) * T` from idle (admitted iff debt + T <= limit *
/// T); a fixed window's or a quota's at the window's end. The reply's `reset_after_ms` is
/// rounded up, so 1 ms less never denies a call the server would admit.
pub fn exhausted_wait(policy: &Policy, d: &Decision) -> Option<f64> {
    if policy.is_named() || policy.has_penalty() || !d.allowed || d.remaining != 0 || d.cached {
        return None;
    }
    let reset = d.reset_after_ms as f64 - 1.0;
    let wait = match policy.algo() {
        "FIXED" | "QUOTA" => reset,
        "GCRA" | "TOKENBUCKET" | "LEAKY" if policy.quota_q() > 0 => {
            let unit = policy.window_ms()? as f64 / policy.quota_q() as f64;
            reset - (d.limit - 1) as f64 * unit
        }
        _ => return None,
    };
    (wait >= 1.0).then_some(wait)
}

#[derive(Clone, Debug)]
struct Entry {
    cost: u64,
    remaining: i64,
    until: Instant,
    reset_at: Instant,
    limit: i64,
    backend: Backend,
    tick: u64,
}

#[derive(Default, Debug)]
struct Inner {
    map: HashMap<(String, String), Entry>,
    order: BTreeMap<u64, (String, String)>,
    tick: u64,
    high_water: usize,
}

impl Inner {
    fn touch(&mut self, ident: &(String, String)) {
        self.tick += 1;
        let tick = self.tick;
        if let Some(e) = self.map.get_mut(ident) {
            self.order.remove(&e.tick);
            e.tick = tick;
            self.order.insert(tick, ident.clone());
        }
    }

    fn remove(&mut self, ident: &(String, String)) {
        if let Some(e) = self.map.remove(ident) {
            self.order.remove(&e.tick);
        }
    }
}

/// A bounded map of denied identities (at most `max_entries`, at least 1). Shared by a
/// [`Limiter`](crate::Limiter)'s clones; safe across threads.
#[derive(Debug)]
pub struct DenialCache {
    max_entries: usize,
    exhausted: bool,
    inner: Mutex<Inner>,
}

impl Default for DenialCache {
    fn default() -> Self {
        DenialCache::new(DEFAULT_MAX_ENTRIES)
    }
}

fn ms_between(later: Instant, earlier: Instant) -> i64 {
    let d = later.saturating_duration_since(earlier);
    // Rounded up: a deadline 0.2 ms away is 1 ms away.
    (d.as_nanos().div_ceil(1_000_000)) as i64
}

impl DenialCache {
    /// A cache of at most `max_entries` identities (at least 1).
    pub fn new(max_entries: usize) -> DenialCache {
        DenialCache {
            max_entries: max_entries.max(1),
            exhausted: false,
            inner: Mutex::new(Inner::default()),
        }
    }

    /// This cache, writing an admission that left nothing too when `on` (default off): see
    /// [`exhausted_wait`].
    pub fn exhausted(mut self, on: bool) -> DenialCache {
        self.exhausted = on;
        self
    }

    /// Whether it writes an admission that left nothing ([`exhausted`](DenialCache::exhausted)).
    pub fn is_exhausted(&self) -> bool {
        self.exhausted
    }

    /// Its bound.
    pub fn max_entries(&self) -> usize {
        self.max_entries
    }

    /// The identities it holds now.
    pub fn len(&self) -> usize {
        self.lock().map.len()
    }

    /// Whether it holds none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The most entries ever held at once (never above `max_entries`).
    pub fn high_water(&self) -> usize {
        self.lock().high_water
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The cached denial of `cost` on (key, policy), or None: nothing cached, expired (then
    /// dropped), or a cost smaller than the denied one.
    pub fn get(&self, key: &str, policy: &Policy, cost: u64) -> Option<Decision> {
        let now = Instant::now();
        let mut inner = self.lock();
        // Nothing denied (the common case): no identity to build.
        if inner.map.is_empty() {
            return None;
        }
        let ident = (held(key), policy.identity());
        let entry = inner.map.get(&ident)?.clone();
        if entry.until <= now {
            inner.remove(&ident);
            return None;
        }
        if cost < entry.cost {
            return None;
        }
        inner.touch(&ident);
        drop(inner);
        let mut d = Decision::from_reply(
            [
                0,
                entry.limit,
                entry.remaining,
                ms_between(entry.until, now).max(1),
                ms_between(entry.reset_at, now).max(0),
            ],
            entry.backend,
            Some(policy.clone()),
            Some(false),
        );
        d.cached = true;
        Some(d)
    }

    /// Records `decision` (the server's answer to a call of `cost` sent at `sent`) if it is a
    /// denial with `retry_after_ms` > 0, or, with [`exhausted`](DenialCache::exhausted) on, a
    /// spending (`spent`) admission that left nothing ([`exhausted_wait`]), as a denial of any
    /// cost until then; anything else is not written.
    pub fn put(
        &self,
        key: &str,
        policy: &Policy,
        cost: u64,
        decision: &Decision,
        sent: Instant,
        spent: bool,
    ) {
        let ms = |n: i64| std::time::Duration::from_millis(n.max(0) as u64);
        let (cost, remaining, until) = if decision.allowed {
            let wait = if spent && self.exhausted {
                exhausted_wait(policy, decision)
            } else {
                None
            };
            let Some(wait) = wait else {
                return;
            };
            (
                1,
                0,
                sent + std::time::Duration::from_micros((wait * 1000.0) as u64),
            )
        } else if decision.retry_after_ms <= 0 || decision.cached {
            return;
        } else {
            (cost, decision.remaining, sent + ms(decision.retry_after_ms))
        };
        let ident = (held(key), policy.identity());
        let mut inner = self.lock();
        inner.remove(&ident);
        inner.tick += 1;
        let tick = inner.tick;
        inner.map.insert(
            ident.clone(),
            Entry {
                cost,
                remaining,
                until,
                reset_at: sent + ms(decision.reset_after_ms),
                limit: decision.limit,
                backend: decision.backend,
                tick,
            },
        );
        inner.order.insert(tick, ident);
        while inner.map.len() > self.max_entries {
            let Some((_, oldest)) = inner.order.pop_first() else {
                break;
            };
            inner.map.remove(&oldest);
        }
        inner.high_water = inner.high_water.max(inner.map.len());
    }

    /// Forgets (key, policy), or every entry of `key` when `policy` is None.
    pub fn drop_key(&self, key: &str, policy: Option<&Policy>) {
        let mut inner = self.lock();
        match policy {
            Some(p) => inner.remove(&(held(key), p.identity())),
            None => {
                let kept = held(key);
                let idents: Vec<_> = inner
                    .map
                    .keys()
                    .filter(|(k, _)| *k == kept)
                    .cloned()
                    .collect();
                for ident in idents {
                    inner.remove(&ident);
                }
            }
        }
    }

    /// Forgets everything.
    pub fn clear(&self) {
        let mut inner = self.lock();
        inner.map.clear();
        inner.order.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn denial(retry: i64) -> Decision {
        Decision::from_reply([0, 5, 0, retry, retry], Backend::Module, None, None)
    }

    #[test]
    fn smaller_cost_is_not_denied_and_bound_holds() {
        let c = DenialCache::new(2);
        let p = Policy::fixed(5, "1m");
        c.put("a", &p, 3, &denial(60_000), Instant::now(), true);
        assert!(c.get("a", &p, 2).is_none());
        let hit = c.get("a", &p, 3).expect("cached");
        assert!(hit.cached && !hit.allowed && hit.retry_after_ms > 59_000);
        c.put("b", &p, 1, &denial(60_000), Instant::now(), true);
        c.get("a", &p, 3);
        c.put("c", &p, 1, &denial(60_000), Instant::now(), true);
        assert_eq!(c.len(), 2);
        assert!(
            c.get("b", &p, 1).is_none(),
            "the least recently used goes first"
        );
        assert!(c.get("a", &p, 5).is_some());
        c.put("d", &p, 1, &denial(-1), Instant::now(), true);
        assert!(c.get("d", &p, 1).is_none());
    }
}
