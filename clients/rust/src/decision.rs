//! Decisions: the commands' five integers, typed, and the HTTP headers they give.
//!
//! The headers are those of docs/commands.md ("The shared reply" and "The IETF RateLimit
//! fields"), as the Python and Node packages give them: seconds are milliseconds divided by
//! 1,000 and rounded up, so a client that waits them is never early; `Retry-After` is sent on a
//! denial only, and never for a request that can never be admitted (`retry_after_ms == -1`). A
//! quota's `RateLimit-Policy` `w` is its current period's length in whole days.
//!
//! A decision by a server-side policy ([`Policy::named`]) knows the reply, not the policy's
//! quota or window: its `RateLimit-Policy` is `"<name>";q=<limit>`, `q` the reply's `limit`,
//! and no `w`. A `SHADOW` policy answers a denial as admitted, with nothing remaining and a
//! non-zero `retry_after_ms`: that decision is [`shadowed`](Decision::shadowed). A `DEBIT` or
//! `REFUND` is never denied, so its decision is never shadowed, whatever its reply.

use crate::policy::Policy;

/// Which server side answered: the `rl` module's commands, or the Functions library.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Backend {
    /// The module's commands (`RL.GCRA`, ...).
    Module,
    /// The Functions library (`FCALL rl_gcra`, ...), loaded by this crate where missing.
    Library,
}

impl Backend {
    /// `"module"` or `"library"`.
    pub fn as_str(self) -> &'static str {
        match self {
            Backend::Module => "module",
            Backend::Library => "library",
        }
    }
}

fn ceil_seconds(ms: i64) -> i64 {
    ms.div_euclid(1000) + i64::from(ms.rem_euclid(1000) != 0)
}

/// One limiter's decision (the shared reply), and where it came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Decision {
    /// Admitted.
    pub allowed: bool,
    /// The limit (a window's limit, a rate's burst or capacity).
    pub limit: i64,
    /// What is left after this request.
    pub remaining: i64,
    /// Denied: ms until the same request is admitted, -1 if it never can be. Allowed: 0 (for
    /// the leaky bucket, the delay before performing the request).
    pub retry_after_ms: i64,
    /// ms until the limiter is idle again; 0 when idle.
    pub reset_after_ms: i64,
    /// Module or library.
    pub backend: Backend,
    /// The policy decided, for the IETF fields; None for leases.
    pub policy: Option<Policy>,
    /// A denial given by the limiter's denial cache, without a call: the server's denial as
    /// it stands now.
    pub cached: bool,
    /// Whether this is a shadowed denial where that is known besides the reply (a `DEBIT`'s
    /// or `REFUND`'s: never; a reservation's: read from its policy's definition).
    pub(crate) known_shadowed: Option<bool>,
}

impl Decision {
    /// The decision of a reply `[allowed, limit, remaining, retry_after_ms, reset_after_ms]`
    /// from `backend`, by `policy` (None for a lease).
    pub fn new(reply: [i64; 5], backend: Backend, policy: Option<Policy>) -> Decision {
        Decision::from_reply(reply, backend, policy, None)
    }

    pub(crate) fn from_reply(
        reply: [i64; 5],
        backend: Backend,
        policy: Option<Policy>,
        known_shadowed: Option<bool>,
    ) -> Decision {
        Decision {
            allowed: reply[0] == 1,
            limit: reply[1],
            remaining: reply[2],
            retry_after_ms: reply[3],
            reset_after_ms: reply[4],
            backend,
            policy,
            cached: false,
            known_shadowed,
        }
    }

    /// The reply of a `SHADOW` policy's denial: by a server-side policy, admitted, nothing
    /// remaining, a non-zero `retry_after_ms`.
    pub(crate) fn looks_shadowed(&self) -> bool {
        self.policy.as_ref().is_some_and(Policy::is_named)
            && self.allowed
            && self.remaining == 0
            && self.retry_after_ms != 0
    }

    /// A `SHADOW` policy's denial, answered as admitted: a server-side policy that admitted
    /// with nothing remaining and a non-zero `retry_after_ms` (what the enforced policy would
    /// have answered). Always false for an inline [`Policy`] and a lease, and for a `DEBIT`
    /// or `REFUND`. (A named `LEAKY` policy's admission that takes the queue's last place
    /// reads so too; [`Limiter::reserve`](crate::Limiter::reserve) tells the two apart by the
    /// policy's definition.)
    pub fn shadowed(&self) -> bool {
        self.known_shadowed.unwrap_or_else(|| self.looks_shadowed())
    }

    /// The policy's name: an inline policy's own (may be `""`), or the server-side policy's.
    pub fn policy_name(&self) -> &str {
        self.policy.as_ref().map_or("", Policy::policy_name)
    }

    /// `Retry-After` in seconds on a denial; None when allowed or never admissible.
    pub fn retry_after(&self) -> Option<i64> {
        if self.allowed || self.retry_after_ms < 0 {
            return None;
        }
        Some(ceil_seconds(self.retry_after_ms))
    }

    /// `X-RateLimit-Reset` and the IETF `t`: seconds until idle, rounded up.
    pub fn reset_after(&self) -> i64 {
        ceil_seconds(self.reset_after_ms)
    }

    /// `X-RateLimit-Limit`, `-Remaining`, `-Reset`, and `Retry-After` on a denial.
    pub fn headers(&self) -> Vec<(&'static str, String)> {
        // Room for all_headers' too (IETF fields appended).
        let mut out = Vec::with_capacity(6);
        out.extend([
            ("X-RateLimit-Limit", self.limit.to_string()),
            ("X-RateLimit-Remaining", self.remaining.to_string()),
            ("X-RateLimit-Reset", self.reset_after().to_string()),
        ]);
        if let Some(s) = self.retry_after() {
            out.push(("Retry-After", s.to_string()));
        }
        out
    }

    /// The IETF draft's `RateLimit-Policy` and `RateLimit` fields (and `Retry-After` on a
    /// denial), for the policy named `name` (None or `""`: the policy's name, else
    /// `"default"`). A lease decision has only `RateLimit`; a server-side policy's
    /// `RateLimit-Policy` is `"<name>";q=<limit>`, without `w`.
    pub fn ietf_headers(&self, name: Option<&str>) -> Vec<(&'static str, String)> {
        let label = match name {
            Some(n) if !n.is_empty() => n,
            _ if !self.policy_name().is_empty() => self.policy_name(),
            _ => "default",
        };
        let mut out = Vec::with_capacity(3);
        match &self.policy {
            Some(p) if p.is_named() => {
                out.push(("RateLimit-Policy", format!("\"{label}\";q={}", self.limit)));
            }
            Some(p) => {
                if let Some(w) = p.period_s(self.reset_after_ms) {
                    out.push((
                        "RateLimit-Policy",
                        format!("\"{label}\";q={};w={w}", p.quota_q()),
                    ));
                }
            }
            None => {}
        }
        out.push((
            "RateLimit",
            format!("\"{label}\";r={};t={}", self.remaining, self.reset_after()),
        ));
        if let Some(s) = self.retry_after() {
            out.push(("Retry-After", s.to_string()));
        }
        out
    }

    /// [`headers`](Decision::headers) and [`ietf_headers`](Decision::ietf_headers) together,
    /// each field once, in that order.
    ///
    /// ```
    /// use redis_rl::{Backend, Decision, Policy};
    /// // RL.SLIDING's reply to a denied request: retry in 1.2 s, idle in 30.5 s.
    /// let policy = Policy::sliding(100, "1m").name("api");
    /// let d = Decision::new([0, 100, 0, 1200, 30_500], Backend::Module, Some(policy));
    /// let text: Vec<String> = d.all_headers(None).iter().map(|(k, v)| format!("{k}: {v}")).collect();
    /// assert_eq!(text, [
    ///     "X-RateLimit-Limit: 100",
    ///     "X-RateLimit-Remaining: 0",
    ///     "X-RateLimit-Reset: 31",
    ///     "Retry-After: 2",
    ///     "RateLimit-Policy: \"api\";q=100;w=60",
    ///     "RateLimit: \"api\";r=0;t=31",
    /// ]);
    /// ```
    pub fn all_headers(&self, name: Option<&str>) -> Vec<(&'static str, String)> {
        let mut out = self.headers();
        for (k, v) in self.ietf_headers(name) {
            if let Some(slot) = out.iter_mut().find(|(have, _)| *have == k) {
                slot.1 = v;
            } else {
                out.push((k, v));
            }
        }
        out
    }
}

/// `RL.ALL`'s reply: the binding layer's decision, and every layer's in key order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AllDecision {
    /// The binding layer's decision.
    pub binding: Decision,
    /// Every layer's decision. A denial from the denial cache knows only its cached layers:
    /// the others are None (no call was made).
    pub layers: Vec<Option<Decision>>,
    /// The binding layer's position in `layers`.
    pub index: usize,
}

impl AllDecision {
    /// Admitted (every layer admitted, and spent).
    pub fn allowed(&self) -> bool {
        self.binding.allowed
    }

    /// Denied by the denial cache, without a call.
    pub fn cached(&self) -> bool {
        self.binding.cached
    }

    /// The positions in `layers` of the layers whose `SHADOW` policy denied: empty when none
    /// did. The call was decided by the other layers.
    pub fn shadowed(&self) -> Vec<usize> {
        self.layers
            .iter()
            .enumerate()
            .filter(|(_, d)| d.as_ref().is_some_and(Decision::shadowed))
            .map(|(i, _)| i)
            .collect()
    }
}

/// One entry of `RL.TOP` ([`Limiter::top`](crate::Limiter::top)): a key the policy (or
/// command) denied, its denials counted, and how much that count may exceed the true number
/// (the true denials lie between `denials - overestimate` and `denials`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TopEntry {
    /// The key (a key longer than 128 bytes is its first 128 bytes followed by `...`).
    pub key: String,
    /// Its denials counted.
    pub denials: i64,
    /// How much `denials` may exceed the true number.
    pub overestimate: i64,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(allowed: bool, retry: i64, reset: i64, policy: Option<Policy>) -> Decision {
        Decision::from_reply(
            [i64::from(allowed), 10, 0, retry, reset],
            Backend::Module,
            policy,
            None,
        )
    }

    #[test]
    fn headers_round_up() {
        let x = d(
            false,
            1001,
            2500,
            Some(Policy::sliding(10, "1m").name("api")),
        );
        assert_eq!(
            x.all_headers(None),
            vec![
                ("X-RateLimit-Limit", "10".to_string()),
                ("X-RateLimit-Remaining", "0".into()),
                ("X-RateLimit-Reset", "3".into()),
                ("Retry-After", "2".into()),
                ("RateLimit-Policy", "\"api\";q=10;w=60".into()),
                ("RateLimit", "\"api\";r=0;t=3".into()),
            ]
        );
        let never = d(false, -1, 0, None);
        assert_eq!(never.retry_after(), None);
        assert_eq!(
            never.ietf_headers(None),
            vec![("RateLimit", "\"default\";r=0;t=0".into())]
        );
        let named = d(true, 0, 0, Some(Policy::named("free")));
        assert_eq!(named.ietf_headers(None)[0].1, "\"free\";q=10");
    }
}
