//! Random argument lists against a command replying redis-cell's five integers
//! (`CL.THROTTLE`, `GCRA`): every call gets an `ERR` or a sane reply.

use std::ops::RangeInclusive;

use rand::rngs::StdRng;
use rand::seq::IndexedRandom;
use rand::{Rng, SeedableRng};

use super::error_text;

/// Sends 2,000 calls of `command` on seven keys, each with `argc` words drawn from
/// `words` (seeded by `seed`). A reply must be `[limited 0|1, limit, remaining within
/// 0..=limit, retry_after -1 or more (-1 when allowed), reset 0 or more]`; an error must
/// be an `ERR`.
pub fn five_integers_or_an_error(
    c: &mut redis::Connection,
    command: &str,
    words: &[&str],
    argc: RangeInclusive<usize>,
    seed: u64,
) {
    let mut rng = StdRng::seed_from_u64(seed);
    for i in 0..2_000 {
        let n = rng.random_range(argc.clone());
        let args: Vec<&str> = (0..n).map(|_| *words.choose(&mut rng).unwrap()).collect();
        let mut cmd = redis::cmd(command);
        cmd.arg(format!("k{}", i % 7)).arg(&args);
        match cmd.query::<Vec<i64>>(c) {
            Ok(r) => {
                assert_eq!(r.len(), 5, "{args:?}");
                assert!(matches!(r[0], 0 | 1), "{args:?} {r:?}");
                assert!((0..=r[1]).contains(&r[2]), "{args:?} {r:?}");
                assert!(r[3] >= -1 && r[4] >= 0, "{args:?} {r:?}");
                assert!(r[0] == 1 || r[3] == -1, "{args:?} {r:?}");
            }
            Err(e) => {
                let text = error_text(&e);
                assert!(text.starts_with("ERR "), "{args:?}: {text}");
            }
        }
    }
}
