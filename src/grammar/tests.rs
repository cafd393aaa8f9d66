//! The shared form's parser, on the grammar's edges.

use super::scalars::parse_duration;
use super::*;
use crate::algorithm::gcra::Gcra;
use crate::bounds::{MAX_COST, MAX_COUNT};
use crate::config::{Caps, DEFAULT_SLIDING_LOG_MAX};
use crate::error::RlError;

fn p(kind: Kind, args: &str) -> Result<Request, RlError> {
    let v: Vec<&[u8]> = args.split_whitespace().map(str::as_bytes).collect();
    parse(kind, &v, Caps::default())
}

const SEC: u64 = 1_000_000_000;

#[test]
fn durations_with_units() {
    for (text, ns) in [
        ("60", 60 * SEC),
        ("1500ms", 1_500_000_000),
        ("1500MS", 1_500_000_000),
        ("1m", 60 * SEC),
        ("24h", 86_400 * SEC),
        ("2D", 2 * 86_400 * SEC),
        ("1ms", 1_000_000),
        ("3650d", 3650 * 86_400 * SEC),
    ] {
        assert_eq!(parse_duration("period", text.as_bytes()), Ok(ns), "{text}");
    }
    for bad in [
        "",
        "0",
        "0ms",
        "3651d",
        "1.5s",
        "-1",
        "1 s",
        "s",
        "1w",
        "99999999999999999999999",
    ] {
        assert_eq!(
            parse_duration("period", bad.as_bytes()),
            Err(RlError::BadDuration("period")),
            "{bad}"
        );
    }
}

#[test]
fn gcra_with_options_in_any_order_and_case() {
    let r = p(Kind::Gcra, "10 1s peek Cost 3 burst 5").unwrap();
    assert_eq!(
        r,
        Request {
            limiter: Limiter::Gcra(Gcra::new(10, SEC, 5).unwrap()),
            cost: 3,
            charge: Charge::Cost,
            peek: true,
            block: None,
            penalty: None,
        }
    );
    let d = p(Kind::Gcra, "10 1s").unwrap();
    assert_eq!((d.cost, d.peek), (1, false));
    assert!(matches!(d.limiter, Limiter::Gcra(g) if g.burst() == 1));
}

#[test]
fn errors_name_the_argument_and_range() {
    assert_eq!(p(Kind::Gcra, "10"), Err(RlError::WrongArity("rl.gcra")));
    assert_eq!(
        p(Kind::Fixed, "0 1s"),
        Err(RlError::BadInteger {
            name: "limit",
            min: 1,
            max: MAX_COUNT
        })
    );
    assert_eq!(
        p(Kind::TokenBucket, "5 1000000000001 1s"),
        Err(RlError::BadInteger {
            name: "refill",
            min: 1,
            max: MAX_COUNT
        })
    );
    assert_eq!(
        p(Kind::Fixed, "5 1s COST -1"),
        Err(RlError::BadInteger {
            name: "COST",
            min: 0,
            max: MAX_COST
        })
    );
    assert_eq!(
        p(Kind::Fixed, "5 1s COST"),
        Err(RlError::MissingValue("COST"))
    );
    assert_eq!(
        p(Kind::Fixed, "5 1s COST 1 cost 2"),
        Err(RlError::RepeatedOption("COST"))
    );
    assert_eq!(
        p(Kind::Fixed, "5 1s PEEK PEEK"),
        Err(RlError::RepeatedOption("PEEK"))
    );
    assert!(matches!(
        p(Kind::Fixed, "5 1s BURST 2"),
        Err(RlError::UnknownOption {
            command: "rl.fixed",
            ..
        })
    ));
    assert_eq!(
        p(Kind::SlidingLog, "100001 1s"),
        Err(RlError::BadInteger {
            name: "limit",
            min: 1,
            max: DEFAULT_SLIDING_LOG_MAX
        })
    );
    assert_eq!(
        p(Kind::Leaky, "5 1 nan"),
        Err(RlError::BadDuration("period"))
    );
}

#[test]
fn refund_replaces_cost() {
    let r = p(Kind::Fixed, "5 1s REFUND 2").unwrap();
    assert_eq!((r.cost, r.charge), (2, Charge::Refund));
    assert_eq!(
        p(Kind::Fixed, "5 1s REFUND 1 COST 1"),
        Err(RlError::CostWithRefund)
    );
    assert_eq!(
        p(Kind::Fixed, "5 1s REFUND"),
        Err(RlError::MissingValue("REFUND"))
    );
    let clause = form(Kind::Fixed, "5 1s REFUND 1", Form::Clause).unwrap();
    assert_eq!((clause.cost, clause.charge), (1, Charge::Refund));
    assert_eq!(
        form(Kind::Fixed, "5 1s REFUND 1", Form::Peek),
        Err(RlError::UnknownOption {
            option: "REFUND".into(),
            command: "rl.peek",
            expected: "COST",
        })
    );
}

#[test]
fn debit_replaces_cost_and_never_peeks_or_waits() {
    let r = p(Kind::Gcra, "5 1s debit 9").unwrap();
    assert_eq!((r.cost, r.charge), (9, Charge::Debit));
    let clause = form(Kind::SlidingLog, "5 1s DEBIT 3", Form::Clause).unwrap();
    assert_eq!((clause.cost, clause.charge), (3, Charge::Debit));
    for (args, with) in [
        ("5 1s DEBIT 1 COST 1", "COST"),
        ("5 1s REFUND 1 DEBIT 1", "REFUND"),
        ("5 1s DEBIT 1 PEEK", "PEEK"),
        ("5 1s BLOCK 10 DEBIT 1", "BLOCK"),
    ] {
        assert_eq!(
            p(Kind::Fixed, args),
            Err(RlError::DebitWith(with)),
            "{args}"
        );
    }
    let bad = RlError::BadInteger {
        name: "DEBIT",
        min: 1,
        max: MAX_COST,
    };
    for value in ["0", "-1", "1.5", "1000000000001", "x"] {
        assert_eq!(
            p(Kind::Fixed, &format!("5 1s DEBIT {value}")),
            Err(bad.clone())
        );
    }
    assert_eq!(
        p(Kind::Fixed, "5 1s DEBIT 1 DEBIT 1"),
        Err(RlError::RepeatedOption("DEBIT"))
    );
    assert_eq!(
        text(p(Kind::Fixed, "5 1s DEBIT 1 PEEK")),
        "ERR DEBIT cannot be used with PEEK"
    );
}

fn form(kind: Kind, args: &str, form: Form) -> Result<Request, RlError> {
    let v: Vec<&[u8]> = args.split_whitespace().map(str::as_bytes).collect();
    parse_form(kind, &v, Caps::default(), form)
}

fn text(r: Result<Request, RlError>) -> String {
    r.expect_err("an error").to_string()
}

#[test]
fn block_is_an_option_of_the_commands_read_in_its_place() {
    let r = p(Kind::Gcra, "10 1s BLOCK 0 COST 2 block 315360000000").map(|_| ());
    assert_eq!(r, Err(RlError::RepeatedOption("BLOCK")));
    assert_eq!(
        p(Kind::Gcra, "10 1s BLOCK 315360000000 COST 2")
            .unwrap()
            .cost,
        2
    );
    assert!(p(Kind::Fixed, "1 1s peek block 5").unwrap().peek);
    for (args, error) in [
        ("1 1s BLOCK", "ERR option BLOCK needs a value"),
        (
            "1 1s BLOCK -1",
            "ERR BLOCK must be an integer from 0 to 315360000000",
        ),
        (
            "1 1s BLOCK 315360000001",
            "ERR BLOCK must be an integer from 0 to 315360000000",
        ),
        (
            "1 1s BLOCK 1 BLOCK 1",
            "ERR option BLOCK given more than once",
        ),
        // A value is a value: COST's, even when it reads BLOCK.
        (
            "1 1s COST BLOCK 5",
            "ERR COST must be an integer from 0 to 1000000000000",
        ),
        (
            "1 1s BLOCK COST 5",
            "ERR BLOCK must be an integer from 0 to 315360000000",
        ),
        // Left to right: the first bad option is the one named.
        (
            "1 1s FOO BLOCK x",
            "ERR unknown option 'FOO' for 'rl.fixed' (expected COST, REFUND, DEBIT, PEEK, BLOCK or PENALTY)",
        ),
        (
            "1 1s COST x BLOCK x",
            "ERR COST must be an integer from 0 to 1000000000000",
        ),
        (
            "1 1s BLOCK x COST x",
            "ERR BLOCK must be an integer from 0 to 315360000000",
        ),
        // Options before the parameters, as without BLOCK.
        (
            "0 1s BLOCK x",
            "ERR BLOCK must be an integer from 0 to 315360000000",
        ),
        (
            "0 1s BLOCK 5",
            "ERR limit must be an integer from 1 to 1000000000000",
        ),
    ] {
        assert_eq!(text(p(Kind::Fixed, args)), error, "{args}");
    }
    assert_eq!(
        text(p(Kind::Gcra, "1 1s BURST BLOCK")),
        "ERR BURST must be an integer from 1 to 1000000000000"
    );
}

#[test]
fn each_form_lists_exactly_the_options_it_takes() {
    for (kind, args, f, error) in [
        (
            Kind::Gcra,
            "1 1s XYZ",
            Form::Command,
            "ERR unknown option 'XYZ' for 'rl.gcra' (expected BURST, COST, REFUND, DEBIT, PEEK, BLOCK or PENALTY)",
        ),
        (
            Kind::Sliding,
            "1 1s BURST 2",
            Form::Command,
            "ERR unknown option 'BURST' for 'rl.sliding' (expected COST, REFUND, DEBIT, PEEK, BLOCK or PENALTY)",
        ),
        (
            Kind::Gcra,
            "1 1s BLOCK 5",
            Form::Peek,
            "ERR unknown option 'BLOCK' for 'rl.peek' (expected BURST or COST)",
        ),
        (
            Kind::Fixed,
            "1 1s block 5",
            Form::Peek,
            "ERR unknown option 'block' for 'rl.peek' (expected COST)",
        ),
        (
            Kind::Fixed,
            "1 1s PEEK",
            Form::Peek,
            "ERR unknown option 'PEEK' for 'rl.peek' (expected COST)",
        ),
        (
            Kind::TokenBucket,
            "1 1 1s REFUND 1",
            Form::Peek,
            "ERR unknown option 'REFUND' for 'rl.peek' (expected COST)",
        ),
        (
            Kind::Fixed,
            "1 1s BLOCK 5",
            Form::Clause,
            "ERR unknown option 'BLOCK' in RL.ALL clause FIXED (expected COST, REFUND, DEBIT or PENALTY)",
        ),
        (
            Kind::Gcra,
            "1 1s PEEK",
            Form::Clause,
            "ERR unknown option 'PEEK' in RL.ALL clause GCRA (expected BURST, COST, REFUND, DEBIT or PENALTY)",
        ),
        (
            Kind::Leaky,
            "1 1 1s LEASE 1",
            Form::Clause,
            "ERR unknown option 'LEASE' in RL.ALL clause LEAKY (expected COST, REFUND, DEBIT or PENALTY)",
        ),
    ] {
        assert_eq!(text(form(kind, args, f)), error, "{args}");
    }
    // What the lists name, each form takes.
    assert!(form(Kind::Gcra, "1 1s BURST 2 COST 1", Form::Peek).is_ok());
    assert!(form(Kind::Gcra, "1 1s BURST 2 COST 1", Form::Clause).is_ok());
    assert!(form(
        Kind::Gcra,
        "1 1s BURST 2 REFUND 1 PEEK BLOCK 1",
        Form::Command
    )
    .is_ok());
}

#[test]
fn cost_zero_is_valid() {
    assert_eq!(p(Kind::Sliding, "5 1m COST 0").unwrap().cost, 0);
}

#[test]
fn quota_takes_a_unit_and_its_calendar_options_in_every_form() {
    use crate::algorithm::calendar::{Anchor, Calendar, Unit, Zone};
    let calendar = |args: &str, f: Form| match form(Kind::Quota, args, f).unwrap().limiter {
        Limiter::Quota(q) => (q.limit.get(), q.calendar),
        other => panic!("{other:?}"),
    };
    let default = Calendar {
        unit: Unit::Day,
        anchor: Anchor::DEFAULT,
        zone: Zone::Utc,
    };
    assert_eq!(calendar("7 day", Form::Command), (7, default));
    let (_, c) = calendar(
        "7 MONTH COST 2 anchor 2001-01-31T08:00 tz europe/paris PEEK",
        Form::Command,
    );
    assert_eq!(c.text().as_bytes(), b"MONTH 2001-01-31T08:00 Europe/Paris");
    for f in [Form::Clause, Form::Peek, Form::Policy] {
        let (_, c) = calendar("7 WEEK TZ -08:00 ANCHOR 2026-01-04T09:00", f);
        assert_eq!(c.text().as_bytes(), b"WEEK 2026-01-04T09:00 -08:00");
    }
    for (args, f, error) in [
        ("7 YEAR", Form::Command, "ERR unit must be DAY, WEEK or MONTH"),
        ("0 DAY TZ Nowhere", Form::Command, "ERR limit must be an integer from 1 to 1000000000000"),
        ("7 DAY TZ Nowhere", Form::Clause, "ERR unknown time zone 'Nowhere': expected UTC, an offset such as +05:30 or -08:00, or an IANA name such as Europe/Paris"),
        ("7 DAY ANCHOR 2001-02-29T00:00", Form::Peek, "ERR ANCHOR must be a local date and time yyyy-mm-ddThh:mm (such as 2001-01-15T00:00)"),
        ("7 DAY TZ UTC tz UTC", Form::Command, "ERR option TZ given more than once"),
        ("7 DAY ANCHOR", Form::Policy, "ERR option ANCHOR needs a value"),
        ("7 DAY BURST 2", Form::Command, "ERR unknown option 'BURST' for 'rl.quota' (expected TZ, ANCHOR, COST, REFUND, DEBIT, PEEK, BLOCK or PENALTY)"),
        ("7 DAY PEEK", Form::Clause, "ERR unknown option 'PEEK' in RL.ALL clause QUOTA (expected TZ, ANCHOR, COST, REFUND, DEBIT or PENALTY)"),
        ("7 DAY PENALTY 1s", Form::Peek, "ERR unknown option 'PENALTY' for 'rl.peek' (expected TZ, ANCHOR or COST)"),
        ("7 DAY COST 1", Form::Policy, "ERR unknown option 'COST' for 'rl.policy|set' (expected TZ, ANCHOR, PENALTY or SHADOW)"),
        // Every option is checked before the parameters: an unknown one is named first.
        ("7 YEAR FOO", Form::Command, "ERR unknown option 'FOO' for 'rl.quota' (expected TZ, ANCHOR, COST, REFUND, DEBIT, PEEK, BLOCK or PENALTY)"),
    ] {
        assert_eq!(text(form(Kind::Quota, args, f)), error, "{args}");
    }
    // TZ and ANCHOR belong to RL.QUOTA only.
    assert_eq!(
        text(p(Kind::Fixed, "5 1s TZ UTC")),
        "ERR unknown option 'TZ' for 'rl.fixed' (expected COST, REFUND, DEBIT, PEEK, BLOCK or PENALTY)"
    );
}
