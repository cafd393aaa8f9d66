//! The decision commands' algorithms: names, positional parameters, the
//! options each form of their grammar takes. The enum and each kind's names
//! are facts (facts/rl.toml, generated into `crate::facts`).

use std::ffi::CStr;

pub use crate::facts::Kind;
use crate::facts::{KindFacts, KINDS};

/// [`Kind::tag_word`] of every kind, in the facts table's order.
const TAG_WORDS: [(u64, u64); KINDS.len()] = {
    let mut words = [(0, 0); KINDS.len()];
    let mut i = 0;
    while i < KINDS.len() {
        let tag = KINDS[i].tag.as_bytes();
        if tag.len() < 8 {
            let (mut word, mut j) = ((b':' as u64) << (8 * tag.len()), 0);
            while j < tag.len() {
                word |= (tag[j] as u64) << (8 * j);
                j += 1;
            }
            words[i] = (word, u64::MAX >> (8 * (7 - tag.len())));
        }
        i += 1;
    }
    words
};

impl Kind {
    /// This kind's row of the facts table.
    const fn facts(self) -> &'static KindFacts {
        &KINDS[self as usize]
    }

    /// The command's name as registered (and as Redis reports it).
    pub const fn name(self) -> &'static CStr {
        self.facts().command
    }

    /// The command's name as Redis reports it (in arity errors).
    pub fn command(self) -> &'static str {
        self.name().to_str().expect("ASCII")
    }

    /// The command's name as users write it (in error messages).
    pub const fn label(self) -> &'static str {
        self.facts().label
    }

    /// The algorithm's name in an `RL.ALL` clause (`GCRA`, `TOKENBUCKET`, ...).
    pub fn tag_upper(self) -> &'static str {
        self.facts().algo
    }

    /// The prefix naming the algorithm in a stored value (`codec.rs`).
    pub fn tag(self) -> &'static str {
        self.facts().tag
    }

    /// `<tag>:` as the first bytes of a little-endian word, and the mask of
    /// those bytes: a stored value's first eight bytes are compared with it
    /// in one step. `(0, 0)` for a tag too long for a word (the sliding
    /// log's, which no string state carries).
    pub fn tag_word(self) -> (u64, u64) {
        TAG_WORDS[self as usize]
    }

    /// Names of the positional parameters after the key.
    pub fn positionals(self) -> &'static [&'static str] {
        self.facts().params
    }

    /// The number of arguments including the command name and the key.
    pub fn min_argc(self) -> usize {
        2 + self.positionals().len()
    }
}
