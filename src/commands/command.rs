//! A command's descriptor: everything the module declares about it, read by
//! registration, `INFO rl` and `COMMAND DOCS`.

use std::ffi::{c_int, CStr};

use crate::docs::{Doc, KeySpec};
use crate::server::handler::Handler;

/// Where a command's keys are.
#[derive(Clone, Copy)]
pub enum Keys {
    /// None.
    None,
    /// One key, at this argument.
    At(c_int),
    /// A count at this argument, then that many keys (the server asks the
    /// handler for their positions: `getkeys-api`).
    Counted(c_int),
}

/// Everything the module declares about one command.
#[derive(Clone, Copy)]
pub struct Command {
    /// As registered (lowercase, like the server's own commands, so `COMMAND`
    /// and `INFO commandstats` list `rl.gcra`).
    pub name: &'static CStr,
    /// As users write it: in error messages and `INFO rl`'s bookkeeping.
    pub label: &'static str,
    pub handler: Handler,
    pub flags: &'static CStr,
    pub keys: Keys,
    /// Its `INFO rl` field (`rl_<field>:calls=…`); `None`: not counted.
    pub stat: Option<&'static CStr>,
    /// Its `COMMAND DOCS`; `None`: none declared.
    pub doc: Option<fn() -> Doc>,
    /// Registered only if enabled at load (`GCRA`: the `gcra-command` setting
    /// is `yes` and the server has no command of that name); when it is not,
    /// it is neither registered, nor counted, nor documented.
    pub optional: bool,
}

impl Command {
    /// `(first, last, step)` as `RedisModule_CreateCommand` takes them.
    pub fn key_range(&self) -> (c_int, c_int, c_int) {
        match self.keys {
            Keys::None | Keys::Counted(_) => (0, 0, 0),
            Keys::At(i) => (i, i, 1),
        }
    }

    fn has_flag(&self, flag: &str) -> bool {
        self.flags
            .to_str()
            .unwrap_or("")
            .split(' ')
            .any(|f| f == flag)
    }

    /// The ACL categories of a core command with the same flags (`write` or
    /// `read`, plus `fast` or `slow`).
    pub fn acl(&self) -> &'static CStr {
        match (self.has_flag("readonly"), self.has_flag("fast")) {
            (true, true) => c"read fast",
            (true, false) => c"read slow",
            (false, true) => c"write fast",
            (false, false) => c"write slow",
        }
    }

    /// The key spec `COMMAND DOCS` declares beyond the key range (a
    /// read-only key, or keys after a count).
    pub fn key_spec(&self) -> Option<KeySpec> {
        match self.keys {
            Keys::At(i) if self.has_flag("readonly") => Some(KeySpec::ReadAt(i)),
            Keys::None | Keys::At(_) => None,
            Keys::Counted(i) => Some(KeySpec::Numkeys(i)),
        }
    }
}
