//! A key's penalty on the key itself (format: `crate::codec`): after a string
//! state, as the whole string of a key holding only a penalty, or as a
//! sliding log's member scored below every entry. Every write replicates its
//! effect with absolute times, as the limiters' writes do.

use redis_module::raw;

use super::{Held, Key, FIRST_ENTRY_SCORE};
use crate::algorithm::penalty::Penalty;
use crate::algorithm::sliding_log::Entry;
use crate::algorithm::MAX_EXPIRE_MS;
use crate::codec::{penalty_only, split_penalty, with_penalty};
use crate::facts::PENALTY_LOG_SCORE;
use crate::ffi::{api, bytes_of, OwnedString};

impl Key {
    /// A sliding log's lowest members, read with one seek (every call on a
    /// log reads them): its penalty member (scored below every entry), if it
    /// holds one, and its oldest entry. `Err` if a member scored as a penalty
    /// is not one.
    pub fn log_head(&self) -> Result<LogHead, ()> {
        let mut head = LogHead {
            penalty: None,
            oldest: Some(None),
        };
        let mut bad = false;
        let mut seek_entries = false;
        self.scan(
            raw::REDISMODULE_NEGATIVE_INFINITE,
            raw::REDISMODULE_POSITIVE_INFINITE,
            false,
            |k| {
                let (member, score) = k.current();
                if score >= FIRST_ENTRY_SCORE {
                    head.oldest = Entry::parse(bytes_of(member.ptr), score).map(Some);
                    return false;
                }
                if head.penalty.is_some() || score > PENALTY_LOG_SCORE {
                    // Members between the penalty's score and the entries' are
                    // no one's: seek past them rather than walk them.
                    seek_entries = true;
                    return false;
                }
                head.penalty = penalty_only(bytes_of(member.ptr));
                bad = head.penalty.is_none();
                !bad
            },
        );
        if bad {
            return Err(());
        }
        if seek_entries {
            head.oldest = self.oldest_entry();
        }
        Ok(head)
    }

    /// A sliding log's penalty member, if it holds one (`RL.BAN`).
    pub fn log_penalty(&self) -> Result<Option<Penalty>, ()> {
        self.log_head().map(|head| head.penalty)
    }

    /// The key's absolute expiry in milliseconds (`None`: it has none;
    /// `RedisModule_GetAbsExpire` answers -1 then).
    fn expire_at_ms(&self) -> Option<u64> {
        let at = api!(RedisModule_GetAbsExpire(self.ptr()));
        u64::try_from(at).ok()
    }

    /// The later of the key's expiry and `keep_ms` (a key without one gets `keep_ms`).
    fn expiry_keeping(&self, keep_ms: u64) -> u64 {
        self.expire_at_ms().map_or(keep_ms, |at| at.max(keep_ms))
    }

    /// Gives the key the penalty `p` (it held `before`), its state unchanged:
    /// a penalty starting, or `RL.BAN`. The key expires no earlier than `p`'s `keep`.
    pub fn penalize(&self, before: Option<Penalty>, p: &Penalty) {
        match self.held() {
            Held::Zset => {
                self.carry_log_penalty(before, Some(*p));
                let at = self.expiry_keeping(p.keep_ms);
                if self.expire_at_ms() != Some(at) {
                    self.expire_at(at);
                }
            }
            Held::String(bytes) => {
                let state = split_penalty(bytes).ok().and_then(|s| s.state);
                let text = with_penalty(state, p);
                self.write_string(text.as_bytes(), self.expiry_keeping(p.keep_ms));
            }
            _ => self.write_string(with_penalty(None, p).as_bytes(), p.keep_ms),
        }
    }

    /// Removes the key's penalty `before` (`RL.BAN key 0`): a key holding only
    /// it goes; a state stays, with its expiry.
    pub fn lift(&self, before: &Penalty) {
        match self.held() {
            Held::Zset => self.carry_log_penalty(Some(*before), None),
            Held::String(bytes) => match split_penalty(bytes).ok().and_then(|s| s.state) {
                None => self.delete(),
                Some(state) => {
                    let state = state.to_vec();
                    let at = self.expire_at_ms().unwrap_or(MAX_EXPIRE_MS);
                    self.write_string(&state, at);
                }
            },
            _ => {}
        }
    }

    /// Stores `value` (a key holding only a penalty) whatever the key held,
    /// with an absolute expiry; replicates `SET key value PXAT ms` (which
    /// replaces a value of any type on a replica, as here).
    pub fn replace_string(&self, value: &[u8], expire_ms: u64) {
        if !matches!(
            self.held(),
            Held::Empty | Held::String(_) | Held::ShortString
        ) {
            api!(RedisModule_DeleteKey(self.ptr()));
        }
        self.write_string(value, expire_ms);
    }

    /// Before a sliding-log write: the penalty `before` leaves the key unless
    /// it is kept (`after`), and `after` is the set's penalty member. A key
    /// holding only a penalty (a string) is deleted first, so that the log's
    /// set takes its place (`DEL`, then `ZADD`s).
    pub fn carry_log_penalty(&self, before: Option<Penalty>, after: Option<Penalty>) {
        let string = matches!(self.held(), Held::String(_) | Held::ShortString);
        if string {
            self.delete();
        }
        if before == after && !string {
            return;
        }
        if let (Some(b), false) = (before, string) {
            let old = OwnedString::new(self.ctx, with_penalty(None, &b).as_bytes());
            match after {
                // The new member goes in first: the set never empties on the way.
                Some(a) => {
                    self.zset_add(PENALTY_LOG_SCORE as i64, with_penalty(None, &a).as_bytes());
                    self.remove_members(&[old]);
                }
                None => self.remove_members(&[old]),
            }
            return;
        }
        if let Some(a) = after {
            self.zset_add(PENALTY_LOG_SCORE as i64, with_penalty(None, &a).as_bytes());
        }
    }
}

/// A sliding log's lowest members (see [`Key::log_head`]).
#[derive(Clone, Copy)]
pub struct LogHead {
    pub penalty: Option<Penalty>,
    /// Its oldest entry (`Some(None)`: it has none); `None` if the member
    /// there is not a sliding-log entry.
    pub oldest: Option<Option<Entry>>,
}
