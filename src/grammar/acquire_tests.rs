//! Unit tests of `acquire`.

use super::*;
use crate::config::DEFAULT_SLIDING_LOG_MAX;

fn p(args: &[&[u8]]) -> Result<Acquire, RlError> {
    parse_acquire(args, Caps::default())
}

#[test]
fn parses_limit_timeout_id_and_peek() {
    assert_eq!(
        p(&[b"10", b"30s", b"job-1"]),
        Ok(Acquire {
            lease: Lease::new(10, 30_000_000_000).unwrap(),
            peek: false,
            block: None
        })
    );
    assert!(
        p(&[b"1", b"200ms", b"\0\xff binary", b"peek"])
            .unwrap()
            .peek
    );
    assert!(p(&[b"1", b"1s", &[b'x'; 256]]).is_ok());
}

#[test]
fn rejects_bad_arguments() {
    assert_eq!(p(&[b"1", b"1s"]), Err(RlError::WrongArity("rl.acquire")));
    assert_eq!(
        p(&[b"100001", b"1s", b"a"]),
        Err(RlError::BadInteger {
            name: "limit",
            min: 1,
            max: DEFAULT_SLIDING_LOG_MAX
        })
    );
    assert_eq!(
        p(&[b"0", b"1s", b"a"]),
        Err(RlError::BadInteger {
            name: "limit",
            min: 1,
            max: DEFAULT_SLIDING_LOG_MAX
        })
    );
    assert_eq!(
        p(&[b"1", b"0ms", b"a"]),
        Err(RlError::BadDuration("timeout"))
    );
    let too_long = [b'x'; 257];
    for id in [&b""[..], &too_long[..]] {
        assert_eq!(
            p(&[b"1", b"1s", id]),
            Err(RlError::Syntax("lease_id must be 1 to 256 bytes"))
        );
    }
    assert_eq!(
        p(&[b"1", b"1s", b"a", b"PEEK", b"peek"]),
        Err(RlError::RepeatedOption("PEEK"))
    );
    assert!(matches!(
        p(&[b"1", b"1s", b"a", b"COST", b"2"]),
        Err(RlError::UnknownOption {
            command: "rl.acquire",
            expected: "PEEK or BLOCK",
            ..
        })
    ));
    // BLOCK is an option of RL.ACQUIRE's, read in its place.
    assert!(
        p(&[b"1", b"1s", b"a", b"block", b"0", b"PEEK"])
            .unwrap()
            .peek
    );
    for (args, error) in [
        (
            &[&b"1"[..], b"1s", b"a", b"BLOCK"][..],
            "ERR option BLOCK needs a value",
        ),
        (
            &[b"1", b"1s", b"a", b"BLOCK", b"x"],
            "ERR BLOCK must be an integer from 0 to 315360000000",
        ),
        (
            &[b"1", b"1s", b"a", b"BLOCK", b"1", b"BLOCK", b"1"],
            "ERR option BLOCK given more than once",
        ),
        (
            &[b"1", b"1s", b"a", b"COST", b"BLOCK", b"5"],
            "ERR unknown option 'COST' for 'rl.acquire' (expected PEEK or BLOCK)",
        ),
        (
            &[b"1", b"1s", b"a", b"PEEK", b"PEEK", b"BLOCK", b"x"],
            "ERR option PEEK given more than once",
        ),
        // The parameters first, then the options.
        (
            &[b"0", b"1s", b"a", b"BLOCK", b"x"],
            "ERR limit must be an integer from 1 to 100000",
        ),
    ] {
        assert_eq!(p(args).unwrap_err().to_string(), error, "{args:?}");
    }
    // The cap follows the configuration.
    let caps = Caps { sliding_log_max: 5 };
    assert!(parse_acquire(&[b"5", b"1s", b"a"], caps).is_ok());
    assert!(parse_acquire(&[b"6", b"1s", b"a"], caps).is_err());
}
