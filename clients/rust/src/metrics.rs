//! Counters of the decisions this process makes, per layer and result, as a snapshot and as
//! Prometheus text (the text exposition format 0.0.4, written here: no dependency, no global
//! registry; serve it on the route you choose), as the Python and Node packages count:
//!
//! ```text
//! rl_decisions_total{layer="ip",result="within_limit"} 41
//! rl_decisions_total{layer="ip",result="over_limit_with_local_cache"} 1200
//! ```
//!
//! The results, named as envoy's ratelimit service names its stats: `within_limit`
//! (admitted), `over_limit` (denied by the server), `over_limit_with_local_cache` (denied by
//! the denial cache), `shadow_mode` (a `SHADOW` policy's denial, let through),
//! `unavailable` (the server could not decide), `unavailable_fail_open` (the same, let
//! through by a middleware's `fail_open`), `insured_within_limit` and `insured_over_limit`
//! (the other packages' insurance; never counted by this crate), `error` (any other error).
//!
//! A limiter's calls are labelled by their policy's name (`default` for a policy without
//! one), an `RL.ALL` by its binding layer's. Each call counts once.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use crate::cache::DenialCache;

/// Admitted.
pub const WITHIN: &str = "within_limit";
/// Denied by the server.
pub const OVER: &str = "over_limit";
/// Denied by the denial cache, without a call.
pub const OVER_CACHED: &str = "over_limit_with_local_cache";
/// Would have been denied, let through.
pub const SHADOW: &str = "shadow_mode";
/// The server could not decide.
pub const UNAVAILABLE: &str = "unavailable";
/// The server could not decide, let through by `fail_open`.
pub const UNAVAILABLE_OPEN: &str = "unavailable_fail_open";
/// The server could not decide, admitted by an insurance.
pub const INSURED_WITHIN: &str = "insured_within_limit";
/// The server could not decide, denied by an insurance.
pub const INSURED_OVER: &str = "insured_over_limit";
/// Any other error.
pub const ERROR: &str = "error";
/// Every result, in the order a snapshot lists them.
pub const RESULTS: [&str; 9] = [
    WITHIN,
    OVER,
    OVER_CACHED,
    SHADOW,
    UNAVAILABLE,
    UNAVAILABLE_OPEN,
    INSURED_WITHIN,
    INSURED_OVER,
    ERROR,
];

fn label(value: &str) -> String {
    value
        .replace('\\', "\\\\")
        .replace('\n', "\\n")
        .replace('"', "\\\"")
}

/// Counters safe across threads: [`add`](Metrics::add), [`snapshot`](Metrics::snapshot),
/// [`prometheus`](Metrics::prometheus).
#[derive(Debug, Default)]
pub struct Metrics {
    cache: Option<Arc<DenialCache>>,
    /// Per layer, a count per result (in [`RESULTS`]' order): a layer seen is found without
    /// allocating.
    counts: Mutex<BTreeMap<String, [u64; RESULTS.len()]>>,
}

impl Metrics {
    /// Counters, reporting `cache`'s size too when given.
    pub fn new(cache: Option<Arc<DenialCache>>) -> Metrics {
        Metrics {
            cache,
            counts: Mutex::default(),
        }
    }

    /// Adds `n` to (layer, result). `result` is one of [`RESULTS`]; any other is ignored
    /// (and a debug build panics).
    pub fn add(&self, layer: &str, result: &str, n: u64) {
        let Some(at) = RESULTS.iter().position(|r| *r == result) else {
            debug_assert!(false, "unknown result {result:?}");
            return;
        };
        let mut counts = self.counts.lock().unwrap_or_else(|e| e.into_inner());
        match counts.get_mut(layer) {
            Some(per) => per[at] += n,
            None => {
                let mut per = [0; RESULTS.len()];
                per[at] = n;
                counts.insert(layer.to_string(), per);
            }
        }
    }

    /// `{layer: {result: count}}`, every result present for each layer seen (0 when none).
    pub fn snapshot(&self) -> BTreeMap<String, BTreeMap<&'static str, u64>> {
        let counts = self
            .counts
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        counts
            .into_iter()
            .map(|(layer, per)| (layer, RESULTS.into_iter().zip(per).collect()))
            .collect()
    }

    /// Every count added up: the calls (or requests) decided.
    pub fn total(&self) -> u64 {
        self.counts
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .values()
            .flatten()
            .sum()
    }

    /// The counters (and the denial cache's size) in Prometheus' text format.
    pub fn prometheus(&self) -> String {
        let mut lines = vec![
            "# HELP rl_decisions_total Rate-limit decisions made by this process, per layer and result.".to_string(),
            "# TYPE rl_decisions_total counter".to_string(),
        ];
        for (layer, results) in self.snapshot() {
            for result in RESULTS {
                let n = results.get(result).copied().unwrap_or(0);
                lines.push(format!(
                    "rl_decisions_total{{layer=\"{}\",result=\"{result}\"}} {n}",
                    label(&layer)
                ));
            }
        }
        if let Some(cache) = &self.cache {
            lines.extend([
                "# HELP rl_denial_cache_entries Identities the denial cache holds.".to_string(),
                "# TYPE rl_denial_cache_entries gauge".to_string(),
                format!("rl_denial_cache_entries {}", cache.len()),
                "# HELP rl_denial_cache_max_entries The denial cache's bound.".to_string(),
                "# TYPE rl_denial_cache_max_entries gauge".to_string(),
                format!("rl_denial_cache_max_entries {}", cache.max_entries()),
            ]);
        }
        lines.join("\n") + "\n"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prometheus_text() {
        let m = Metrics::new(None);
        m.add("ip \"v4\"", WITHIN, 2);
        m.add("ip \"v4\"", OVER, 1);
        let text = m.prometheus();
        assert!(text
            .contains("rl_decisions_total{layer=\"ip \\\"v4\\\"\",result=\"within_limit\"} 2\n"));
        assert!(text.contains("result=\"error\"} 0\n"));
        assert_eq!(m.total(), 3);
    }
}
