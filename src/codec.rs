//! The documented text format of every stored state, readable with `GET`:
//! `<algorithm>:<field>[:<field>...]`, decimal integers only.
//!
//! | algorithm | string value |
//! |---|---|
//! | `RL.GCRA` | `gcra:<tat_ns>` |
//! | `RL.TOKENBUCKET` | `bucket:<full_at_ns>` |
//! | `RL.LEAKY` | `leaky:<drained_at_ns>` |
//! | `RL.FIXED` | `fixed:<window_start_ms>:<count>` |
//! | `RL.SLIDING` | `sliding:<window_start_ms>:<previous>:<current>` |
//! | `RL.QUOTA` | `quota:<period_start_ms>:<period_end_ms>:<count>:<calendar>` |
//!
//! A quota's `<calendar>` is the canonical text `<UNIT> <anchor> <zone>`: the
//! unit upper-case (`DAY`, `WEEK`, `MONTH`), the anchor `yyyy-mm-ddThh:mm`,
//! the zone `UTC`, a fixed offset `+05:30`/`-08:00`, or an IANA name as the
//! bundled database spells it: `quota:1764547200000:1767225600000:42:MONTH
//! 2001-01-15T00:00 Europe/Paris` (`algorithm::calendar`).
//!
//! The tags are `Kind::tag` (facts/rl.toml's `kinds`).
//!
//! A key's penalty (`PENALTY`, `RL.BAN`) follows a string state after `|`:
//! `gcra:<tat_ns>|penalty:<end_ms>:<len_ms>:<keep_ms>`; a key holding only a
//! penalty is `penalty:<end_ms>:<len_ms>:<keep_ms>`; a sliding log holds it as
//! that member at score -1 (facts/rl.toml's `[penalty]`).
//!
//! `RL.SLIDINGLOG` keeps a sorted set with one member `<ns>:<cost>:<sum>` per
//! admitted request (legacy keys: a bare `<ns>` per unit), scored by the
//! nanosecond's microsecond (see `algorithm::sliding_log`).

use crate::algorithm::calendar::Calendar;
use crate::algorithm::penalty::Penalty;
use crate::decimal::{parse_leading, parse_u64, StackBytes};
use crate::error::RlError;
use crate::facts::{PENALTY_SEPARATOR, PENALTY_TAG};
use crate::grammar::Kind;

/// A stored value: a tag and at most three fields of at most 41 digits.
pub type Text = StackBytes<136>;

/// `:` and `value` in decimal; values above `u64` (rare: far-future instants)
/// are split into 19-digit chunks so the common case stays in `u64` arithmetic.
fn push_field(text: &mut Text, value: u128) {
    const CHUNK: u128 = 10_000_000_000_000_000_000;
    fn digits(text: &mut Text, value: u128) {
        match u64::try_from(value) {
            Ok(v) => text.push_u64(v, 1),
            Err(_) => {
                digits(text, value / CHUNK);
                text.push_u64((value % CHUNK) as u64, 19);
            }
        }
    }
    text.push(b":");
    digits(text, value);
}

/// Encodes a state of `N` fields (at most 3: a tag and three 41-byte fields fit the buffer).
#[cfg(test)]
pub fn encode<const N: usize>(kind: Kind, fields: [u128; N]) -> Text {
    Fields::new(kind, fields).encode()
}

/// A state to store: its algorithm and its fields, encoded only when written
/// (a fraction of the text's size while a decision is passed along).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fields {
    kind: Kind,
    values: [u128; 3],
    len: u8,
}

impl Fields {
    pub fn new<const N: usize>(kind: Kind, fields: [u128; N]) -> Fields {
        const { assert!(N <= 3) };
        let mut values = [0; 3];
        values[..N].copy_from_slice(&fields);
        Fields {
            kind,
            values,
            len: N as u8,
        }
    }

    /// The stored text: the tag, then each field. (Inlined: built in place
    /// where a write stores it.)
    #[inline(always)]
    pub fn encode(&self) -> Text {
        let mut text = Text::new();
        text.push(self.kind.tag().as_bytes());
        for &value in &self.values[..self.len as usize] {
            push_field(&mut text, value);
        }
        text
    }
}

/// A quota's stored text: its period and count as `kind`'s fields, then its
/// calendar's text. (Apart from [`Fields`], which every other kind's write
/// carries: a calendar there is copied with each of their writes.)
pub fn encode_quota(kind: Kind, fields: [u64; 3], calendar: &Calendar) -> Text {
    let mut text = Fields::new(kind, fields.map(u128::from)).encode();
    text.push(b":");
    text.push(calendar.text().as_bytes());
    text
}

/// A string state and its penalty: `tag:fields[|penalty:…]`, or a penalty alone.
pub struct WithPenalty<'a> {
    /// The state's text (`None`: the key holds only a penalty).
    pub state: Option<&'a [u8]>,
    pub penalty: Option<Penalty>,
}

/// Splits a stored string into its state and its penalty; `Err` if the text
/// after the separator is not a penalty.
#[inline]
pub fn split_penalty(bytes: &[u8]) -> Result<WithPenalty<'_>, ()> {
    // (No state's tag starts as the penalty's: one byte tells most calls apart.)
    let maybe_penalty = bytes.first() == PENALTY_TAG.as_bytes().first();
    if let Some(penalty) = maybe_penalty.then(|| penalty_only(bytes)).flatten() {
        return Ok(WithPenalty {
            state: None,
            penalty: Some(penalty),
        });
    }
    // Every call reads its key through here: memrchr finds the separator a
    // word at a time, where a byte loop was a tenth of a call's own work.
    match memchr::memrchr(PENALTY_SEPARATOR.as_bytes()[0], bytes) {
        None => Ok(WithPenalty {
            state: Some(bytes),
            penalty: None,
        }),
        Some(at) => Ok(WithPenalty {
            state: Some(&bytes[..at]),
            penalty: Some(penalty_only(&bytes[at + 1..]).ok_or(())?),
        }),
    }
}

/// `penalty:<end>:<len>:<keep>` (a penalty-only value, or a sliding log's member).
pub fn penalty_only(bytes: &[u8]) -> Option<Penalty> {
    let rest = bytes
        .strip_prefix(PENALTY_TAG.as_bytes())?
        .strip_prefix(b":")?;
    let mut fields = rest.split(|&b| b == b':').map(parse_u64);
    let (end_ms, len_ms, keep_ms) = (fields.next()??, fields.next()??, fields.next()??);
    fields.next().is_none().then_some(Penalty {
        end_ms,
        len_ms,
        keep_ms,
    })
}

/// A stored value: a state's text and a penalty (at most 3 fields of 20 digits more).
pub type Penalized = StackBytes<216>;

/// `penalty:<end>:<len>:<keep>`, after `state` and the separator if there is one.
pub fn with_penalty(state: Option<&[u8]>, p: &Penalty) -> Penalized {
    let mut text = Penalized::new();
    if let Some(state) = state {
        text.push(state);
        text.push(PENALTY_SEPARATOR.as_bytes());
    }
    text.push(PENALTY_TAG.as_bytes());
    for v in [p.end_ms, p.len_ms, p.keep_ms] {
        text.push(b":");
        text.push_u64(v, 1);
    }
    text
}

/// Decodes a value that `kind` must have written into its `N` fields (and
/// nothing after them).
#[cfg(test)]
pub fn decode<const N: usize>(kind: Kind, bytes: &[u8]) -> Result<[u128; N], RlError> {
    match decode_head::<N>(kind, bytes)? {
        (fields, []) => Ok(fields),
        _ => Err(RlError::ForeignValue(kind.label())),
    }
}

/// Decodes the `N` fields a stored value starts with, and returns what
/// follows them: nothing, or a penalty's separator and the penalty (see
/// [`after_state`]). One pass over the fields' digits: the separator is found
/// where the last field's digits end, not searched for.
#[inline]
pub fn decode_head<const N: usize>(
    kind: Kind,
    bytes: &[u8],
) -> Result<([u128; N], &[u8]), RlError> {
    let foreign = || RlError::ForeignValue(kind.label());
    let (word, mask) = kind.tag_word();
    let mut rest = match bytes.first_chunk::<8>() {
        // A key's value is longer than a word (`store::SHORT_STRING`): its
        // tag and `:` are told in one step.
        Some(&head) if mask != 0 => match u64::from_le_bytes(head) & mask == word {
            true => &bytes[(mask.count_ones() / 8) as usize..],
            false => return Err(misfiled(kind, bytes)),
        },
        _ => bytes
            .strip_prefix(kind.tag().as_bytes())
            .and_then(|rest| rest.strip_prefix(b":"))
            .ok_or_else(|| misfiled(kind, bytes))?,
    };
    let mut fields = [0u128; N];
    for (i, slot) in fields.iter_mut().enumerate() {
        let (value, len) = parse_leading(rest).ok_or_else(foreign)?;
        *slot = value;
        rest = &rest[len..];
        if i + 1 < N {
            rest = rest.strip_prefix(b":").ok_or_else(foreign)?;
        }
    }
    Ok((fields, rest))
}

/// The penalty that follows a state's fields (`rest` from [`decode_head`]):
/// `None` after a state alone, `Err` if what follows is not `|` and a penalty.
pub fn after_state(rest: &[u8]) -> Result<Option<Penalty>, ()> {
    match rest.split_first() {
        None => Ok(None),
        Some((&sep, penalty)) if sep == PENALTY_SEPARATOR.as_bytes()[0] => {
            penalty_only(penalty).map(Some).ok_or(())
        }
        Some(_) => Err(()),
    }
}

/// Decodes a quota's state: its three fields, whether its calendar's text
/// is `calendar`'s (any other non-empty text is another calendar), and what
/// follows the calendar (nothing, or a penalty: see [`after_state`]).
pub fn decode_quota<'b>(
    kind: Kind,
    bytes: &'b [u8],
    calendar: &Calendar,
) -> Result<([u64; 3], bool, &'b [u8]), RlError> {
    let foreign = || RlError::ForeignValue(kind.label());
    let Some(mut rest) = bytes
        .strip_prefix(kind.tag().as_bytes())
        .and_then(|rest| rest.strip_prefix(b":"))
    else {
        return Err(misfiled(kind, bytes));
    };
    let mut fields = [0u64; 3];
    for slot in fields.iter_mut() {
        let end = rest.iter().position(|&b| b == b':').ok_or_else(foreign)?;
        *slot = parse_u64(&rest[..end]).ok_or_else(foreign)?;
        rest = &rest[end + 1..];
    }
    // A calendar's text has no `|`: one there starts the penalty.
    let (text, tail) = rest.split_at(memchr::memchr(b'|', rest).unwrap_or(rest.len()));
    if text.is_empty() {
        return Err(foreign());
    }
    Ok((fields, calendar.is_text(text), tail))
}

/// Why a value not starting with `<kind's tag>:` cannot be decoded: another
/// algorithm's state (with or without a penalty after it), or not a state at
/// all (a `|` not followed by a penalty included).
#[cold]
fn misfiled(kind: Kind, bytes: &[u8]) -> RlError {
    let Ok(split) = split_penalty(bytes) else {
        return RlError::ForeignValue(kind.label());
    };
    let state = split.state.unwrap_or_default();
    let tag = state.split(|&b| b == b':').next().unwrap_or_default();
    match Kind::ALL.iter().find(|k| k.tag().as_bytes() == tag) {
        Some(&found) if found != kind => RlError::OtherAlgorithm {
            found: found.label(),
            expected: kind.label(),
        },
        _ => RlError::ForeignValue(kind.label()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips() {
        let t = encode(Kind::Gcra, [1_764_489_600_123_456_789]);
        assert_eq!(t.as_bytes(), b"gcra:1764489600123456789");
        assert_eq!(
            decode::<1>(Kind::Gcra, t.as_bytes()),
            Ok([1_764_489_600_123_456_789])
        );
        let s = encode(Kind::Sliding, [1_764_489_600_000, 0, 12]);
        assert_eq!(s.as_bytes(), b"sliding:1764489600000:0:12");
        assert_eq!(
            decode::<3>(Kind::Sliding, s.as_bytes()),
            Ok([1_764_489_600_000, 0, 12])
        );
        let max = encode(Kind::TokenBucket, [u128::MAX / 10]);
        assert_eq!(
            decode::<1>(Kind::TokenBucket, max.as_bytes()),
            Ok([u128::MAX / 10])
        );
    }

    #[test]
    fn foreign_and_other_algorithms_are_told_apart() {
        assert_eq!(
            decode::<1>(Kind::Gcra, b"bucket:5"),
            Err(RlError::OtherAlgorithm {
                found: "RL.TOKENBUCKET",
                expected: "RL.GCRA"
            })
        );
        for bad in [
            &b"hello"[..],
            b"",
            b"gcra",
            b"gcra:",
            b"gcra:12:3",
            b"gcra:-1",
            b"gcra:1x",
            b"gcra:\x00",
        ] {
            assert_eq!(
                decode::<1>(Kind::Gcra, bad),
                Err(RlError::ForeignValue("RL.GCRA"))
            );
        }
        assert_eq!(decode::<2>(Kind::Fixed, b"fixed:1:2"), Ok([1, 2]));
        assert_eq!(
            decode::<2>(Kind::Fixed, b"fixed:1"),
            Err(RlError::ForeignValue("RL.FIXED"))
        );
    }
}
