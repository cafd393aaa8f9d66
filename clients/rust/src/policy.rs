//! Policies: an algorithm and its parameters, as the commands take them after the key.
//!
//! A policy is what `RL.<ALGO> key <params>` and an `RL.ALL` clause say; it also knows the
//! quota and window the IETF `RateLimit-Policy` field reports: for the windows `q` is the limit
//! and `w` the window; for a rate (GCRA's limit, the token bucket's refill, the leaky bucket's
//! leak) `q` is that count and `w` its period, in whole seconds. A quota reports `q` = its
//! limit and `w` = the current period's length in whole days, in seconds.
//!
//! A policy may carry a penalty ([`Policy::penalty`]: `PENALTY d [ESCALATE max]`, sent after its
//! parameters in a call and in an `RL.ALL` clause, never in `RL.PEEK`).
//!
//! A policy may also be one defined on the server (`RL.POLICY SET free SLIDING 100 1m`):
//! [`Policy::named`]`("free")`, sent as `RL.LIMIT key free`, `RL.PEEK POLICY key free` or an
//! `RL.ALL` clause `POLICY free`. The client then knows the name only, not the quota or the
//! window.

use std::fmt;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::facts::{DURATION_UNITS_MS, MAX_POLICY_NAME};

/// A duration as the commands take it: whole seconds (`u64`), a [`std::time::Duration`] (sent
/// in milliseconds, which it must be whole), or the commands' text (`"1500ms"`, `"1s"`,
/// `"1m"`, `"24h"`, `"1d"`; a bare integer is seconds). Text goes as given: the server checks
/// it.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Dur(Result<String, String>);

impl Dur {
    /// The command-line text, or why it cannot be one.
    pub(crate) fn arg(&self) -> Result<&str, &str> {
        self.0.as_deref().map_err(|e| e.as_str())
    }

    /// The duration in milliseconds, or None for text the server would refuse.
    pub fn as_ms(&self) -> Option<u64> {
        duration_ms(self.arg().ok()?)
    }
}

impl From<u64> for Dur {
    fn from(seconds: u64) -> Self {
        Dur(Ok(seconds.to_string()))
    }
}

impl From<u32> for Dur {
    fn from(seconds: u32) -> Self {
        Dur(Ok(seconds.to_string()))
    }
}

impl From<i32> for Dur {
    fn from(seconds: i32) -> Self {
        Dur(if seconds < 0 {
            Err(format!("a duration is at least 0 seconds: {seconds}"))
        } else {
            Ok(seconds.to_string())
        })
    }
}

impl From<&str> for Dur {
    fn from(text: &str) -> Self {
        Dur(Ok(text.to_string()))
    }
}

impl From<String> for Dur {
    fn from(text: String) -> Self {
        Dur(Ok(text))
    }
}

impl From<Duration> for Dur {
    fn from(d: Duration) -> Self {
        if d.subsec_nanos() % 1_000_000 != 0 {
            return Dur(Err(format!("a duration is whole milliseconds: {d:?}")));
        }
        Dur(Ok(format!("{}ms", d.as_millis())))
    }
}

/// `text` in milliseconds (digits and an optional unit, any case), or None.
pub(crate) fn duration_ms(text: &str) -> Option<u64> {
    let digits = text.bytes().take_while(u8::is_ascii_digit).count();
    if digits == 0 {
        return None;
    }
    let n: u64 = text[..digits].parse().ok()?;
    let unit = text[digits..].to_ascii_lowercase();
    let (_, ms) = DURATION_UNITS_MS.iter().find(|(u, _)| *u == unit)?;
    n.checked_mul(*ms)
}

/// A quota's calendar unit (`RL.QUOTA key limit DAY|WEEK|MONTH`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum QuotaUnit {
    /// Renews every day at the anchor's time.
    Day,
    /// Renews every week on the anchor's weekday and time.
    Week,
    /// Renews every month on the anchor's day (or the month's last) and time.
    Month,
}

impl QuotaUnit {
    fn word(self) -> &'static str {
        match self {
            QuotaUnit::Day => "DAY",
            QuotaUnit::Week => "WEEK",
            QuotaUnit::Month => "MONTH",
        }
    }
}

impl std::str::FromStr for QuotaUnit {
    type Err = crate::Error;

    /// `DAY`, `WEEK` or `MONTH`, any case (as `RL.QUOTA` takes them).
    fn from_str(s: &str) -> Result<QuotaUnit, crate::Error> {
        match s.to_ascii_uppercase().as_str() {
            "DAY" => Ok(QuotaUnit::Day),
            "WEEK" => Ok(QuotaUnit::Week),
            "MONTH" => Ok(QuotaUnit::Month),
            _ => Err(crate::Error::refused(format!(
                "unit must be DAY, WEEK or MONTH: {s:?}"
            ))),
        }
    }
}

/// What identifies a policy's kind.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Spec {
    /// An algorithm and its parameters (`GCRA`, `["10", "1s", "BURST", "5"]`).
    Inline {
        algo: &'static str,
        params: Vec<String>,
    },
    /// A policy defined on the server, by its name.
    Named(String),
}

/// One limiter's algorithm and parameters (or a server-side policy's name). Build one with
/// [`Policy::gcra`], [`Policy::token_bucket`], [`Policy::leaky`], [`Policy::sliding`],
/// [`Policy::sliding_log`], [`Policy::fixed`], [`Policy::quota`] or [`Policy::named`].
///
/// An argument that cannot be sent (a `Duration` that is not whole milliseconds, a name the
/// server would refuse) is an [`Error::Configuration`](crate::Error::Configuration) when the
/// policy is used, before anything is sent.
///
/// ```
/// use redis_rl::Policy;
/// let api = Policy::gcra(10, "1s").burst(5).name("api");
/// assert_eq!(api.to_string(), "GCRA 10 1s BURST 5");
/// let login = Policy::fixed(5, "1m").penalty("10m", Some("1d"));
/// assert_eq!(login.to_string(), "FIXED 5 1m PENALTY 10m ESCALATE 1d");
/// assert_eq!(Policy::named("free").to_string(), "POLICY free");
/// ```
///
/// Cheap to clone: its clones share one definition (a decision carries its policy).
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct Policy {
    d: Arc<Definition>,
}

/// A policy's definition, shared by its clones (changed by the builder methods on a copy where
/// it is shared).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct Definition {
    spec: Spec,
    quota: u64,
    window: Option<Dur>,
    name: String,
    penalty: Vec<String>,
    calendar: Option<(QuotaUnit, u32)>,
    shadow: bool,
    invalid: Option<String>,
}

impl fmt::Debug for Policy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let d = &self.d;
        f.debug_struct("Policy")
            .field("spec", &d.spec)
            .field("quota", &d.quota)
            .field("window", &d.window)
            .field("name", &d.name)
            .field("penalty", &d.penalty)
            .field("calendar", &d.calendar)
            .field("shadow", &d.shadow)
            .field("invalid", &d.invalid)
            .finish()
    }
}

impl Policy {
    fn inline(algo: &'static str, params: Vec<String>, quota: u64, window: Dur) -> Policy {
        let invalid = window.arg().err().map(str::to_string);
        Policy {
            d: Arc::new(Definition {
                spec: Spec::Inline { algo, params },
                quota,
                window: Some(window),
                name: String::new(),
                penalty: Vec::new(),
                calendar: None,
                shadow: false,
                invalid,
            }),
        }
    }

    fn text(d: &Dur) -> String {
        d.arg().unwrap_or("").to_string()
    }

    /// GCRA: `limit` per `period`, evenly spaced (`RL.GCRA key limit period`); bursts of 1
    /// unless [`burst`](Policy::burst).
    pub fn gcra(limit: u64, period: impl Into<Dur>) -> Policy {
        let period = period.into();
        Policy::inline(
            "GCRA",
            vec![limit.to_string(), Self::text(&period)],
            limit,
            period,
        )
    }

    /// GCRA's `BURST b`: up to `b` requests at once. Ignored by the other algorithms.
    pub fn burst(mut self, burst: u64) -> Policy {
        let d = Arc::make_mut(&mut self.d);
        if let Spec::Inline {
            algo: "GCRA",
            params,
        } = &mut d.spec
        {
            params.truncate(2);
            params.extend(["BURST".to_string(), burst.to_string()]);
        }
        self
    }

    /// A bucket of `capacity` tokens, `refill` more per `period` (`RL.TOKENBUCKET`).
    pub fn token_bucket(capacity: u64, refill: u64, period: impl Into<Dur>) -> Policy {
        let period = period.into();
        let params = vec![
            capacity.to_string(),
            refill.to_string(),
            Self::text(&period),
        ];
        Policy::inline("TOKENBUCKET", params, refill, period)
    }

    /// A leaky bucket as a queue of `capacity`, `leak` leaving per `period` (`RL.LEAKY`).
    pub fn leaky(capacity: u64, leak: u64, period: impl Into<Dur>) -> Policy {
        let period = period.into();
        let params = vec![capacity.to_string(), leak.to_string(), Self::text(&period)];
        Policy::inline("LEAKY", params, leak, period)
    }

    fn window(algo: &'static str, limit: u64, window: Dur) -> Policy {
        let params = vec![limit.to_string(), Self::text(&window)];
        Policy::inline(algo, params, limit, window)
    }

    /// The sliding window counter: `limit` per `window`, estimated (`RL.SLIDING`).
    pub fn sliding(limit: u64, window: impl Into<Dur>) -> Policy {
        Policy::window("SLIDING", limit, window.into())
    }

    /// The exact sliding log: `limit` per `window` (`RL.SLIDINGLOG`).
    pub fn sliding_log(limit: u64, window: impl Into<Dur>) -> Policy {
        Policy::window("SLIDINGLOG", limit, window.into())
    }

    /// Fixed windows aligned to the clock: `limit` per `window` (`RL.FIXED`).
    pub fn fixed(limit: u64, window: impl Into<Dur>) -> Policy {
        Policy::window("FIXED", limit, window.into())
    }

    /// A quota on the calendar (`RL.QUOTA key limit DAY|WEEK|MONTH`): `limit` per `unit`,
    /// renewing at the [`anchor`](Policy::anchor)'s local wall time (default
    /// `2001-01-01T00:00`: midnight, Mondays, the 1st) in the [`tz`](Policy::tz) zone (default
    /// UTC).
    pub fn quota(limit: u64, unit: QuotaUnit) -> Policy {
        let window = match unit {
            QuotaUnit::Day => "1d",
            QuotaUnit::Week => "7d",
            QuotaUnit::Month => "31d",
        };
        let mut p = Policy::inline(
            "QUOTA",
            vec![limit.to_string(), unit.word().to_string()],
            limit,
            window.into(),
        );
        Arc::make_mut(&mut p.d).calendar = Some((unit, 1));
        p
    }

    /// A quota's time zone (`TZ zone`): an IANA name (`"Europe/Paris"`), an offset
    /// (`"+05:30"`) or `"UTC"`, as given: the server checks it.
    pub fn tz(mut self, zone: impl Into<String>) -> Policy {
        let d = Arc::make_mut(&mut self.d);
        if let Spec::Inline {
            algo: "QUOTA",
            params,
        } = &mut d.spec
        {
            params.extend(["TZ".to_string(), zone.into()]);
        }
        self
    }

    /// A quota's anchor (`ANCHOR yyyy-mm-ddThh:mm`): the local wall time its periods renew at,
    /// as given: the server checks it.
    pub fn anchor(mut self, anchor: impl Into<String>) -> Policy {
        let d = Arc::make_mut(&mut self.d);
        let anchor = anchor.into();
        if let Spec::Inline {
            algo: "QUOTA",
            params,
        } = &mut d.spec
        {
            let day = anchor_day(&anchor).unwrap_or(1);
            params.extend(["ANCHOR".to_string(), anchor]);
            if let Some((unit, _)) = d.calendar {
                d.calendar = Some((unit, day));
            }
        }
        self
    }

    /// A policy defined on the server (`RL.POLICY SET name ...`), called by its name
    /// (`RL.LIMIT key name`). The name is checked as the server checks it (1 to 64 of `A-Z
    /// a-z 0-9 _ . : -`).
    pub fn named(name: impl Into<String>) -> Policy {
        let name = name.into();
        let ok = !name.is_empty()
            && name.len() <= MAX_POLICY_NAME
            && name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"_.:-".contains(&b));
        let invalid = (!ok).then(|| {
            format!(
                "a policy name is 1 to {MAX_POLICY_NAME} of A-Z, a-z, 0-9 and _ . : -: {name:?}"
            )
        });
        Policy {
            d: Arc::new(Definition {
                spec: Spec::Named(name),
                quota: 0,
                window: None,
                name: String::new(),
                penalty: Vec::new(),
                calendar: None,
                shadow: false,
                invalid,
            }),
        }
    }

    /// This policy, named `name` in the IETF fields and in the counters (a server-side
    /// policy's name is its own).
    pub fn name(mut self, name: impl Into<String>) -> Policy {
        let d = Arc::make_mut(&mut self.d);
        if !matches!(d.spec, Spec::Named(_)) {
            d.name = name.into();
        }
        self
    }

    /// `PENALTY d [ESCALATE max]`: a denial starts a penalty of `d` on the key, during which
    /// every call on it is denied; with `escalate`, a penalty that starts within `max` of the
    /// previous one's end lasts twice as long, at most `max`. A server-side policy's penalty
    /// is its definition's: this is refused on one.
    pub fn penalty<D: Into<Dur>>(mut self, d: D, escalate: Option<D>) -> Policy {
        let def = Arc::make_mut(&mut self.d);
        if matches!(def.spec, Spec::Named(_)) {
            def.invalid = Some("a server-side policy's penalty is its definition's".into());
            return self;
        }
        let d = d.into();
        def.penalty = vec!["PENALTY".into(), Self::text(&d)];
        if let Err(e) = d.arg() {
            def.invalid.get_or_insert(e.to_string());
        }
        if let Some(max) = escalate {
            let max = max.into();
            if let Err(e) = max.arg() {
                def.invalid.get_or_insert(e.to_string());
            }
            def.penalty.extend(["ESCALATE".into(), Self::text(&max)]);
        }
        self
    }

    /// Marks the policy `SHADOW` in its server-side definition
    /// ([`Limiter::define`](crate::Limiter::define)): it decides and writes as if enforced, but
    /// answers its denials as admitted. The commands take `SHADOW` only in a definition: a
    /// shadow policy is called by its name.
    pub fn shadow(mut self) -> Policy {
        let d = Arc::make_mut(&mut self.d);
        d.shadow = true;
        self
    }

    /// Whether this is a server-side policy, called by its name.
    pub fn is_named(&self) -> bool {
        matches!(self.d.spec, Spec::Named(_))
    }

    /// Whether [`shadow`](Policy::shadow) marked it.
    pub fn is_shadow(&self) -> bool {
        self.d.shadow
    }

    /// The algorithm's word (`GCRA`, ..., `QUOTA`), or `POLICY` for a server-side policy.
    pub fn algo(&self) -> &str {
        match &self.d.spec {
            Spec::Inline { algo, .. } => algo,
            Spec::Named(_) => "POLICY",
        }
    }

    /// The policy's name: its own ([`name`](Policy::name), may be `""`), or the server-side
    /// policy's.
    pub fn policy_name(&self) -> &str {
        match &self.d.spec {
            Spec::Named(name) => name,
            Spec::Inline { .. } => &self.d.name,
        }
    }

    /// The IETF `q`: the limit of a window or a quota, the count of a rate (0 for a
    /// server-side policy, whose quota the client does not know).
    pub fn quota_q(&self) -> u64 {
        self.d.quota
    }

    /// Its window (or a rate's period) in milliseconds; None for a server-side policy and
    /// for text the server would refuse.
    pub(crate) fn window_ms(&self) -> Option<u64> {
        self.d.window.as_ref()?.as_ms()
    }

    /// Whether it carries `PENALTY d [ESCALATE max]`.
    pub(crate) fn has_penalty(&self) -> bool {
        !self.d.penalty.is_empty()
    }

    /// The IETF `w` of a window or a rate: its window (or period) in whole seconds, rounded
    /// up; None for a server-side policy and for text the server would refuse.
    pub fn window_s(&self) -> Option<u64> {
        let ms = self.d.window.as_ref()?.as_ms()?;
        Some(ms.div_ceil(1000).max(1))
    }

    /// The IETF `w` of a decision whose reply said `reset_after_ms`: a quota's current period
    /// in seconds (its renewal now + `reset_after_ms`), else [`window_s`](Policy::window_s).
    pub fn period_s(&self, reset_after_ms: i64) -> Option<u64> {
        let Some(calendar) = self.d.calendar else {
            return self.window_s();
        };
        let now_ms = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_millis() as i64)
            .unwrap_or(0);
        Some(quota_period_s(calendar, now_ms + reset_after_ms.max(0)))
    }

    /// The argument error found while building, if any.
    pub(crate) fn check(&self) -> Result<(), crate::Error> {
        match &self.d.invalid {
            Some(why) => Err(crate::Error::refused(why.clone())),
            None => Ok(()),
        }
    }

    /// What follows the key in a call: `ALGO params [PENALTY ...]` without `ALGO` (the
    /// command names it), or the server-side policy's name.
    pub(crate) fn words(&self, penalty: bool) -> Vec<String> {
        match &self.d.spec {
            Spec::Inline { params, .. } => {
                let mut out = params.clone();
                if penalty {
                    out.extend(self.d.penalty.iter().cloned());
                }
                out
            }
            Spec::Named(name) => vec![name.clone()],
        }
    }

    /// [`words`](Policy::words) with the penalty, written into `cmd` (without copies).
    pub(crate) fn write_words(&self, cmd: &mut redis::Cmd) {
        match &self.d.spec {
            Spec::Inline { params, .. } => {
                for w in params.iter().chain(self.d.penalty.iter()) {
                    cmd.arg(w.as_bytes());
                }
            }
            Spec::Named(name) => {
                cmd.arg(name.as_bytes());
            }
        }
    }

    /// Its server-side definition after the name: `ALGO params [PENALTY d [ESCALATE max]]
    /// [SHADOW]` (what `RL.POLICY SET name` takes); None for a server-side policy.
    pub fn definition(&self) -> Option<String> {
        let Spec::Inline { algo, .. } = &self.d.spec else {
            return None;
        };
        let mut words = vec![algo.to_string()];
        words.extend(self.words(true));
        if self.d.shadow {
            words.push("SHADOW".into());
        }
        Some(words.join(" "))
    }

    /// What identifies it in the denial cache: the algorithm, parameters and penalty (its
    /// name is only the headers'), or a server-side policy's name.
    pub(crate) fn identity(&self) -> String {
        match &self.d.spec {
            Spec::Inline { algo, params } => {
                let mut s = algo.to_string();
                for w in params.iter().chain(self.d.penalty.iter()) {
                    s.push('\0');
                    s.push_str(w);
                }
                s
            }
            Spec::Named(name) => format!("POLICY\0{name}"),
        }
    }

    /// The counters' `layer` label: its name, `default` for a policy without one.
    pub fn label(&self) -> &str {
        let name = self.policy_name();
        if name.is_empty() {
            "default"
        } else {
            name
        }
    }
}

impl fmt::Display for Policy {
    /// The clause an `RL.ALL` takes: `ALGO params [PENALTY d [ESCALATE max]]`, or `POLICY name`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.algo(), self.words(true).join(" "))
    }
}

fn anchor_day(anchor: &str) -> Option<u32> {
    let b = anchor.as_bytes();
    let shape = b.len() == 16
        && b[4] == b'-'
        && b[7] == b'-'
        && b[10] == b'T'
        && b[13] == b':'
        && [0, 1, 2, 3, 5, 6, 8, 9, 11, 12, 14, 15]
            .iter()
            .all(|&i| b[i].is_ascii_digit());
    if !shape {
        return None;
    }
    anchor[8..10].parse().ok()
}

/// Days from 1970-01-01 to the civil date (proleptic Gregorian).
fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let m = m as i64;
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + d as i64 - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The civil date of a day counted from 1970-01-01.
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

fn days_in_month(y: i64, m: u32) -> u32 {
    let (ny, nm) = if m == 12 { (y + 1, 1) } else { (y, m + 1) };
    (days_from_civil(ny, nm, 1) - days_from_civil(y, m, 1)) as u32
}

/// The day number of the month's renewal for an anchor on `day`: that day, or the month's last.
fn renewal(y: i64, m: u32, day: u32) -> i64 {
    days_from_civil(y, m, day.min(days_in_month(y, m)))
}

/// The length in seconds of the quota period that ends at `renewal_ms` (epoch ms): a day
/// 86,400, a week 604,800, a month the whole days from the renewal before it to it. The
/// renewal's local date is within a day of its UTC date, and renewals are at least 28 days
/// apart, so it is the first renewal date from the day before the UTC date on (the Python
/// package's `quota_period_s`); a change of offset inside the period is not counted.
pub fn quota_period_s(calendar: (QuotaUnit, u32), renewal_ms: i64) -> u64 {
    let (unit, day) = calendar;
    match unit {
        QuotaUnit::Day => return 86_400,
        QuotaUnit::Week => return 604_800,
        QuotaUnit::Month => {}
    }
    let utc = renewal_ms.div_euclid(86_400_000) - 1;
    let (mut y, mut m, _) = civil_from_days(utc);
    if utc > renewal(y, m, day) {
        (y, m) = if m == 12 { (y + 1, 1) } else { (y, m + 1) };
    }
    let (py, pm) = if m == 1 { (y - 1, 12) } else { (y, m - 1) };
    (renewal(y, m, day) - renewal(py, pm, day)) as u64 * 86_400
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn civil_round_trip() {
        for z in -800_000..800_000 {
            let (y, m, d) = civil_from_days(z);
            assert_eq!(days_from_civil(y, m, d), z);
        }
    }

    #[test]
    fn month_periods() {
        // Renewal 2026-03-31 00:00 UTC, anchored on the 31st: from 2026-02-28, 31 days.
        let ms = days_from_civil(2026, 3, 31) * 86_400_000;
        assert_eq!(quota_period_s((QuotaUnit::Month, 31), ms), 31 * 86_400);
        let ms = days_from_civil(2026, 2, 28) * 86_400_000;
        assert_eq!(quota_period_s((QuotaUnit::Month, 31), ms), 28 * 86_400);
        let ms = days_from_civil(2026, 5, 1) * 86_400_000;
        assert_eq!(quota_period_s((QuotaUnit::Month, 1), ms), 30 * 86_400);
    }

    #[test]
    fn units() {
        assert_eq!("month".parse::<QuotaUnit>().unwrap(), QuotaUnit::Month);
        let e = "year".parse::<QuotaUnit>().unwrap_err();
        assert_eq!(e.to_string(), "unit must be DAY, WEEK or MONTH: \"year\"");
    }

    #[test]
    fn durations() {
        assert_eq!(duration_ms("1500ms"), Some(1500));
        assert_eq!(duration_ms("2M"), Some(120_000));
        assert_eq!(duration_ms("7"), Some(7000));
        assert_eq!(duration_ms("x"), None);
        assert!(Dur::from(Duration::from_micros(1500)).arg().is_err());
    }
}
