//! `RL.ACQUIRE key limit timeout lease_id [PEEK] [BLOCK ms]` and `RL.RELEASE key lease_id`:
//! in-flight (concurrency) limits. At most `limit` leases are held at once; a
//! lease not released within `timeout` lapses by itself, so a crashed client
//! cannot leak capacity; acquiring a held id renews it (a heartbeat).
//!
//! State: a sorted set, member `lease:<lease_id>`, score the lapse time in
//! microseconds since the epoch (see `store::LEASE_PREFIX`).

use std::os::raw::c_int;

use redis_module::raw;

use crate::algorithm::expire_ms;
use crate::algorithm::lease::{
    lapse_ns, release, us_of, Lease, LeaseView, LeaseWrite, ReleaseWrite,
};
use crate::algorithm::Outcome;
use crate::args::{parse_block, parse_count, parse_duration, set_once, Caps, MAX_COUNT};
use crate::command::{args, guarded, with_bytes, Reply};
use crate::error::{sanitize, RlError};
use crate::store::{arg_bytes, lease_member, Held, Key};
use crate::{clock, config, stats, wait};

/// Lease ids are 1 to this many bytes (any bytes).
pub const MAX_LEASE_ID: usize = 256;

const ACQUIRE: &str = "RL.ACQUIRE";
const RELEASE: &str = "RL.RELEASE";

/// A parsed `RL.ACQUIRE` (the lease id is taken from the arguments as is).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Acquire {
    pub lease: Lease,
    pub peek: bool,
    /// `BLOCK ms`, if given.
    pub block: Option<u64>,
}

/// Parses `limit timeout lease_id [PEEK] [BLOCK ms]` (the arguments after the
/// key): the parameters, then the options left to right. `limit` is capped
/// like `RL.SLIDINGLOG`'s (`rl.sliding-log-max-limit`): a lease set holds up
/// to `limit` members.
pub fn parse_acquire(params: &[&[u8]], caps: Caps) -> Result<Acquire, RlError> {
    let [limit, timeout, id, options @ ..] = params else {
        return Err(RlError::WrongArity("rl.acquire"));
    };
    // The limit is at least 1 by now: only the timeout can be refused.
    let lease = Lease::new(
        parse_count("limit", limit, caps.sliding_log_max.min(MAX_COUNT))?,
        parse_duration("timeout", timeout)?,
    )
    .ok_or(RlError::BadDuration("timeout"))?;
    check_id(id)?;
    let mut peek = false;
    let mut block = None;
    let mut rest = options.iter();
    while let Some(option) = rest.next() {
        if option.eq_ignore_ascii_case(b"PEEK") {
            if peek {
                return Err(RlError::RepeatedOption("PEEK"));
            }
            peek = true;
        } else if option.eq_ignore_ascii_case(b"BLOCK") {
            set_once(&mut block, "BLOCK", rest.next(), parse_block)?;
        } else {
            return Err(RlError::UnknownOption {
                option: sanitize(option),
                command: "rl.acquire",
                expected: "PEEK or BLOCK",
            });
        }
    }
    Ok(Acquire { lease, peek, block })
}

fn check_id(id: &[u8]) -> Result<(), RlError> {
    if (1..=MAX_LEASE_ID).contains(&id.len()) {
        Ok(())
    } else {
        Err(RlError::Syntax("lease_id must be 1 to 256 bytes"))
    }
}

/// The `RL.ACQUIRE` handler.
pub extern "C" fn acquire(
    ctx: *mut raw::RedisModuleCtx,
    argv: *mut *mut raw::RedisModuleString,
    argc: c_int,
) -> c_int {
    let argv = args(argv, argc);
    if wait::wants_block(argv, 5) {
        return wait::dispatch(ctx, argv, wait::Target::Acquire);
    }
    guarded(ctx, ACQUIRE, || run_acquire(ctx, argv).map(Reply::Decision))
}

/// The `RL.RELEASE` handler.
pub extern "C" fn release_command(
    ctx: *mut raw::RedisModuleCtx,
    argv: *mut *mut raw::RedisModuleString,
    argc: c_int,
) -> c_int {
    guarded(ctx, RELEASE, || {
        run_release(ctx, args(argv, argc)).map(Reply::Integer)
    })
}

fn run_acquire(
    ctx: *mut raw::RedisModuleCtx,
    argv: &[*mut raw::RedisModuleString],
) -> Result<[i64; 5], RlError> {
    if argv.len() < 5 {
        return Err(RlError::WrongArity("rl.acquire"));
    }
    let request = with_bytes(&argv[2..], |params| parse_acquire(params, config::caps()))?;
    let member = lease_member(arg_bytes(argv[4]));
    let now = clock::now_ns();
    let key = Key::open(ctx, argv[1]).ok_or(RlError::Internal(ACQUIRE))?;
    let mut out = decide_acquire(&key, &request.lease, &member, now)?;
    if wait::active() {
        wait::queue_ahead(
            ctx,
            argv[1],
            &key,
            &wait::Claim::acquire(request.lease, &member),
            now,
            &mut out,
        )?;
    }
    if let (false, Some(write)) = (request.peek, &out.write) {
        commit_acquire(&key, &member, write);
    }
    stats::decision(ACQUIRE, out.decision.allowed, 1);
    Ok(out.decision.reply())
}

/// Decides acquiring lease `member` (prefixed) on `key` at `now`, writing nothing.
pub fn decide_acquire(
    key: &Key,
    lease: &Lease,
    member: &[u8],
    now: u64,
) -> Result<Outcome<LeaseWrite>, RlError> {
    with_leases(key, |view| lease.acquire(view, now, member))
}

/// True if lease `member` is held at `now` (acquiring it again is a renewal).
pub fn is_held(key: &Key, member: &[u8], now: u64) -> Result<bool, RlError> {
    with_leases(key, |view| {
        view.lapse_of(member).is_some_and(|l| l > us_of(now))
    })
}

/// Applies an admitted acquisition, replicating its effect.
pub fn commit_acquire(key: &Key, member: &[u8], write: &LeaseWrite) {
    key.write_lease(member, write, expire_ms(lapse_ns(write.latest_us)));
}

fn run_release(
    ctx: *mut raw::RedisModuleCtx,
    argv: &[*mut raw::RedisModuleString],
) -> Result<i64, RlError> {
    if argv.len() != 3 {
        return Err(RlError::WrongArity("rl.release"));
    }
    let id = arg_bytes(argv[2]);
    check_id(id)?;
    let member = lease_member(id);
    let now = clock::now_ns();
    let key = Key::open(ctx, argv[1]).ok_or(RlError::Internal(RELEASE))?;
    let released = with_leases(&key, |view| release(view, now, &member))?;
    match released.write {
        None => {}
        Some(ReleaseWrite::Delete) => key.delete(),
        Some(ReleaseWrite::Remove {
            cutoff_us,
            latest_us,
        }) => key.release_lease(&member, cutoff_us, expire_ms(lapse_ns(latest_us))),
    }
    if released.write.is_some() && wait::active() {
        wait::wake(ctx, argv[1]);
    }
    Ok(released.held as i64)
}

/// Runs `f` on the key's leases: none if it is empty; an error, leaving the key
/// untouched, if it holds anything but a lease set. If the key vanished during
/// a count (see `store::Key`), `f` runs again on the now-absent key.
fn with_leases<T>(key: &Key, f: impl Fn(&dyn LeaseView) -> T) -> Result<T, RlError> {
    key.settled(|| leases_once(key, &f))
}

fn leases_once<T>(key: &Key, f: &impl Fn(&dyn LeaseView) -> T) -> Result<T, RlError> {
    match key.held() {
        Held::Empty => Ok(f(&NoLeases)),
        Held::Zset => {
            let leases = key.as_leases().ok_or(RlError::ForeignValue(ACQUIRE))?;
            Ok(f(&leases))
        }
        Held::String(_) | Held::ShortString | Held::Other => Err(RlError::WrongType),
    }
}

/// An absent lease set.
struct NoLeases;

impl LeaseView for NoLeases {
    fn held_at(&self, _: u64) -> u64 {
        0
    }
    fn lapse_of(&self, _: &[u8]) -> Option<u64> {
        None
    }
    fn nth_lapse_after(&self, _: u64, _: u64) -> Option<u64> {
        None
    }
    fn nth_latest(&self, _: u64) -> Option<u64> {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::args::DEFAULT_SLIDING_LOG_MAX;

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
}
