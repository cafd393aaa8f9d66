//! The constants the Functions library (`functions/rl.lua`) shares with the
//! module, checked against the module's own: the kinds, the per-call caps, the
//! default settings and the stored-state details. Those that are facts
//! (facts/rl.toml) are generated into both (`src/facts.rs`,
//! `functions/parts/04-facts.lua`), so this checks the generator and the join;
//! the rest are typed on each side, and a change on one fails here until the
//! other follows. (Error texts are compared byte for byte by the library's
//! conformance fuzz, `tests/it/functions.rs`.)

use crate::algorithm::MAX_EXPIRE_MS;
use crate::bounds::{MAX_COST, MAX_COUNT, MAX_DURATION_MS, MAX_LAYERS, MAX_PERIOD_S, TRIM_MAX};
use crate::config::DEFAULT_SLIDING_LOG_MAX;
use crate::error::RlError;
use crate::facts::{KINDS, PENALTY_LOG_SCORE, PENALTY_SEPARATOR, PENALTY_TAG};
use crate::grammar::Kind;
use crate::store::SHORT_STRING;

const LIBRARY: &str = include_str!("../functions/rl.lua");

/// The text after `local NAME = ` on the library's line defining `name` (at
/// any depth: a part's inner constants live in a block of their own).
fn definition(name: &str) -> &'static str {
    let start = format!("local {name} = ");
    let line = LIBRARY
        .lines()
        .map(str::trim_start)
        .find(|l| l.starts_with(&start))
        .unwrap_or_else(|| panic!("the library defines no {name}"));
    line[start.len()..].trim()
}

/// A numeric constant: digits, a product of digits, `big('digits')` or `'digits'`
/// (a number the library passes to the server as text).
fn number(name: &str) -> u128 {
    let text = definition(name);
    let text = text
        .strip_prefix("big('")
        .and_then(|t| t.strip_suffix("')"))
        .or_else(|| text.strip_prefix('\'')?.strip_suffix('\''))
        .unwrap_or(text);
    text.split('*')
        .map(|f| {
            f.trim()
                .parse::<u128>()
                .unwrap_or_else(|_| panic!("{name} = {text}"))
        })
        .product()
}

#[test]
fn caps_and_defaults_are_the_modules() {
    for (name, module) in [
        ("MAX_COUNT", MAX_COUNT as u128),
        ("MAX_COST", MAX_COST as u128),
        ("MAX_DURATION_MS", MAX_DURATION_MS as u128),
        ("MAX_LAYERS", MAX_LAYERS as u128),
        ("MAX_PERIOD_S", MAX_PERIOD_S as u128),
        ("TRIM_MAX_TEXT", TRIM_MAX as u128),
        ("SLIDING_LOG_MAX", DEFAULT_SLIDING_LOG_MAX as u128),
        ("MAX_EXPIRE_MS", MAX_EXPIRE_MS as u128),
        ("SHORT_STRING", SHORT_STRING as u128),
        ("U64_MAX", u64::MAX as u128),
        ("I64_MAX", i64::MAX as u128),
    ] {
        assert_eq!(number(name), module, "{name}");
    }
}

#[test]
fn stored_formats_and_texts_are_the_modules() {
    assert_eq!(definition("LEASE_PREFIX"), "'lease:'");
    assert_eq!(crate::store::lease_member(b""), b"lease:");
    let penalty = format!(
        "  local PENALTY = {{ tag = '{PENALTY_TAG}', separator = '{PENALTY_SEPARATOR}', log_score = {} }}",
        PENALTY_LOG_SCORE as i64
    );
    assert!(LIBRARY.contains(&penalty), "the library lacks\n{penalty}");
    let wrong_type = format!("    wrong_type = '{}',", RlError::WrongType);
    assert!(
        LIBRARY.contains(&wrong_type),
        "the library's ERR lacks\n{wrong_type}"
    );
}

#[test]
fn every_kind_has_the_modules_names_and_parameters() {
    for kind in Kind::ALL {
        let line = format!(
            "    {} = {{ command = '{}', label = '{}', tag = '{}', params = {{ {} }}, fcall = '{}' }},",
            kind.tag_upper(),
            kind.command(),
            kind.label(),
            kind.tag(),
            kind.positionals()
                .iter()
                .map(|p| format!("'{p}'"))
                .collect::<Vec<_>>()
                .join(", "),
            KINDS[kind as usize].fcall,
        );
        assert!(LIBRARY.contains(&line), "the library's KINDS lacks\n{line}");
    }
}
