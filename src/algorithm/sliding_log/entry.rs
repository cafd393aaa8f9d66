//! The entry format: one sorted-set member per admitted request (`<ns>:<cost>:<sum>`,
//! or the bare `<ns>` of a legacy entry), scored by its nanosecond's microsecond.

use super::super::NANOS_PER_US;
use crate::decimal::StackBytes;

/// One stored entry: a request of `cost` units at nanosecond `ns`, and `sum`,
/// the running total through it (`None` for a legacy entry: one unit, no sum).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Entry {
    pub ns: u64,
    pub cost: u64,
    pub sum: Option<u64>,
}

/// The stored log holds something the module did not write, or that would
/// overflow: the key is refused, untouched.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Corrupt;

impl Entry {
    pub fn legacy(ns: u64) -> Entry {
        Entry {
            ns,
            cost: 1,
            sum: None,
        }
    }

    pub fn weighted(ns: u64, cost: u64, sum: u64) -> Entry {
        Entry {
            ns,
            cost,
            sum: Some(sum),
        }
    }

    pub fn score(&self) -> u64 {
        score_of(self.ns)
    }

    /// The sorted-set member: `<ns>:<cost>:<sum>` with `ns` zero-padded to 19
    /// digits (so members of one score sort by time), or the bare `<ns>` of a
    /// legacy entry.
    pub fn member(&self) -> Member {
        let mut member = Member::new();
        match self.sum {
            Some(sum) => {
                member.push_u64(self.ns, 19);
                member.push(b":");
                member.push_u64(self.cost, 1);
                member.push(b":");
                member.push_u64(sum, 1);
            }
            None => member.push_u64(self.ns, 1),
        }
        member
    }

    /// Parses a stored member and checks its score; `None` if the module did not
    /// write it (a weighted entry has `1 <= cost <= sum`).
    pub fn parse(member: &[u8], score: f64) -> Option<Entry> {
        // One pass over up to three fields of 1 to 20 digits, separated by `:`.
        let mut fields = [0u64; 3];
        let (mut field, mut len) = (0, 0);
        for &b in member {
            if b == b':' {
                if len == 0 || field == 2 {
                    return None;
                }
                (field, len) = (field + 1, 0);
            } else {
                let digit = b.wrapping_sub(b'0');
                if digit > 9 || len == 20 {
                    return None;
                }
                fields[field] = fields[field].checked_mul(10)?.checked_add(digit.into())?;
                len += 1;
            }
        }
        let entry = match (field, len) {
            (_, 0) | (1, _) => return None,
            (0, _) => Entry::legacy(fields[0]),
            _ => {
                let [ns, cost, sum] = fields;
                if cost == 0 || sum < cost {
                    return None;
                }
                Entry::weighted(ns, cost, sum)
            }
        };
        (score == entry.score() as f64).then_some(entry)
    }
}

/// A sorted-set member: at most 19 + 1 + 20 + 1 + 20 bytes.
pub type Member = StackBytes<61>;

/// The score of an entry at nanosecond `ns`.
pub fn score_of(ns: u64) -> u64 {
    ns / NANOS_PER_US
}
