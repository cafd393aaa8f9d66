//! `GCRA`'s grammar: Redis's errors, its overflow checks, the module's bounds.

use super::*;

const SEC: u128 = 1_000_000_000;
/// 2026-01-01 in microseconds.
const NOW_US: i64 = 1_767_225_600_000_000;

fn p(words: &str) -> Result<GcraArgs, RlError> {
    let v: Vec<&[u8]> = words.split(' ').map(str::as_bytes).collect();
    parse(&v)
}

fn err(text: &'static str) -> Result<GcraArgs, RlError> {
    Err(RlError::Syntax(text))
}

#[test]
fn redis_argument_errors_in_redis_order() {
    // gcra.tcl, "GCRA - argument validation".
    for words in [
        "-1 5 10",
        "notanumber 5 10",
        "+1 5 10",
        "01 5 10",
        "-0 5 10",
        " 1 5 10",
    ] {
        assert_eq!(p(words), err(NOT_POSITIVE), "{words}");
    }
    assert_eq!(p("9223372036854775808 5 10"), err(NOT_POSITIVE));
    for words in ["10 0 10", "10 -1 10"] {
        assert_eq!(p(words), err(BELOW_ONE), "{words}");
    }
    for words in ["10 notanumber 10", "10 1.5 10", "10 9223372036854775808 10"] {
        assert_eq!(p(words), err(NOT_INTEGER), "{words}");
    }
    for words in [
        "10 5 0",
        "10 5 -1",
        "10 5 -0",
        "10 5 1e12",
        "10 5 inf",
        "10 5 1e-400",
    ] {
        assert_eq!(p(words), err(PERIOD_RANGE), "{words}");
    }
    for words in [
        "10 5 notanumber",
        "10 5 nan",
        "10 5 +1",
        "10 5 0x10",
        "10 5 1e",
        "10 5 .",
        "10 5 1s",
    ] {
        assert_eq!(p(words), err(NOT_FLOAT), "{words}");
    }
    assert_eq!(p("10 5 10 TOKENS"), err(MISSING_TOKENS));
    assert_eq!(p("10 5 10 COST"), err(SYNTAX));
    assert_eq!(p("10 5 10 COST 1"), err(SYNTAX));
    assert_eq!(p("10 5 10 TOKENS 0"), err(BELOW_ONE));
    assert_eq!(p("10 5 10 TOKENS -1"), err(BELOW_ONE));
    assert_eq!(p("10 5 10 TOKENS notanumber"), err(NOT_INTEGER));
    // The first bad argument is the one reported.
    assert_eq!(p("-1 0 0 TOKENS 0"), err(NOT_POSITIVE));
    assert_eq!(p("1 0 0 TOKENS 0"), err(BELOW_ONE));
    assert_eq!(p("1 1 0 TOKENS 0"), err(PERIOD_RANGE));
}

#[test]
fn valid_arguments_as_redis_reads_them() {
    let a = p("10 5 60").unwrap();
    assert_eq!(
        (a.max_burst, a.tokens_per_period, a.period_ns, a.tokens),
        (10, 5, 60 * SEC, 1)
    );
    assert_eq!(p("10 5 60 tokens 2").unwrap().tokens, 2);
    assert_eq!(
        p("0 1 1 TOKENS 9223372036854775807").unwrap().tokens,
        i64::MAX as u64
    );
    for (period, ns) in [
        ("0.5", SEC / 2),
        ("1.", SEC),
        (".25", SEC / 4),
        ("1e3", 1_000 * SEC),
        ("1E+3", 1_000 * SEC),
        ("2.5e-3", 2_500_000),
        ("0.0000000015", 2),
        ("0.0000000014", 1),
        ("0.0000000001", 0),
        ("999999999999.999", 999_999_999_999_999_000_000),
        ("000000000000000000000000000000000000001.25", SEC * 5 / 4),
        ("1.0000000000000000000000000000000000001", SEC),
        (
            "12345678901234567890123456789012345e-30",
            12_345_678_901_235,
        ),
    ] {
        assert_eq!(
            p(&format!("1 1 {period}")).unwrap().period_ns,
            ns,
            "{period}"
        );
    }
}

#[test]
fn redis_overflow_checks() {
    // gcra.tcl, "GCRA - overflow": each refused as Redis refuses it.
    let overflow = |words: &str| p(words).unwrap().overflow(NOW_US);
    let tokens = Some(RlError::Syntax(TOKENS_OVERFLOW));
    let burst = Some(RlError::Syntax(BURST_OVERFLOW));
    assert_eq!(overflow("1 1 86400 TOKENS 200000000"), tokens);
    assert_eq!(overflow("200000000 1 86400"), burst);
    assert_eq!(overflow("1 1 2147483647 TOKENS 2147483647"), tokens);
    // At the edge: 86,400,000,000 µs * 106,751,991 fits, one more does not.
    assert_eq!(overflow("106751990 1 86400"), None);
    assert_eq!(overflow("106751991 1 86400"), burst);
    // The interval is rounded to the nearest microsecond, and is at least 1.
    assert_eq!(overflow("0 3 0.000001 TOKENS 9223372036854775807"), tokens);
    assert_eq!(overflow("9223372036854775807 1000000 1"), None);
    assert_eq!(overflow("9223372036854775806 1000000 1"), None);
    assert_eq!(overflow("9223372036854775806 500000 1"), burst);
    // now + TOKENS * interval must fit too.
    let edge = (i64::MAX - NOW_US) as u64;
    assert_eq!(overflow(&format!("0 1 0.000001 TOKENS {edge}")), None);
    assert_eq!(
        overflow(&format!("0 1 0.000001 TOKENS {}", edge + 1)),
        tokens
    );
}

#[test]
fn module_bounds_after_redis_checks() {
    let request = |words: &str| p(words).unwrap().request();
    let r = request("5 10 60 TOKENS 3").unwrap();
    assert_eq!(
        r.limiter,
        Limiter::Gcra(Gcra::new(10, 60 * SEC as u64, 6).unwrap())
    );
    assert_eq!(
        (r.cost, r.charge, r.peek, r.block),
        (3, Charge::Cost, false, None)
    );
    let bad = |name, min, max| Err(RlError::BadInteger { name, min, max });
    assert_eq!(request("1000000000001 1 1"), bad("max_burst", 0, MAX_COUNT));
    assert!(request("1000000000000 1 1").is_ok());
    assert_eq!(
        request("1 1000000000001 3600"),
        bad("tokens_per_period", 1, MAX_COUNT)
    );
    assert_eq!(
        request("1 1 1 TOKENS 1000000000001"),
        bad("TOKENS", 1, MAX_COST)
    );
    assert!(request("1 1 315360000").is_ok());
    assert_eq!(
        request("1 1 315360000.000000001"),
        Err(RlError::Syntax(PERIOD_TOO_LONG))
    );
    let rate = Err(RlError::RateTooHigh {
        rate: "tokens_per_period",
        period: "period",
    });
    assert_eq!(request("1 2 0.000000001"), rate);
    assert_eq!(request("1 1 0.0000000001"), rate);
    assert!(request("1 1000000000 1").is_ok());
}

#[test]
fn redis_long_is_string2ll() {
    for (text, v) in [
        ("0", Some(0)),
        ("-5", Some(-5)),
        ("9223372036854775807", Some(i64::MAX)),
    ] {
        assert_eq!(redis_long(text.as_bytes()), v, "{text}");
    }
    assert_eq!(redis_long(b"-9223372036854775808"), Some(i64::MIN));
    for bad in [
        "",
        "-",
        "00",
        "01",
        "-0",
        "+1",
        "1 ",
        "1.0",
        "9223372036854775808",
        "123456789012345678901",
    ] {
        assert_eq!(redis_long(bad.as_bytes()), None, "{bad}");
    }
}

#[test]
fn whole_seconds_read_as_the_general_path_reads_them() {
    for text in [
        "1",
        "60",
        "3600",
        "000060",
        "315360000",
        "999999999999",
        "123456789012345",
    ] {
        let fast = parse_period(text.as_bytes());
        let general = parse_period(format!("{text}.0").as_bytes());
        assert_eq!(fast, general, "{text}");
    }
    assert_eq!(parse_period(b"0"), Err(RlError::Syntax(PERIOD_RANGE)));
    assert_eq!(parse_period(b"000"), Err(RlError::Syntax(PERIOD_RANGE)));
    assert_eq!(
        parse_period(b"1000000000000"),
        Err(RlError::Syntax(PERIOD_RANGE))
    );
}
