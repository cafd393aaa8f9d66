//! What `COMMAND INFO` and `COMMAND DOCS` tell clients and `redis-cli` about each
//! command: arity, summary, complexity, arguments, and RL.ALL's key spec. Redis
//! copies everything passed to `RedisModule_SetCommandInfo`.

use std::ffi::CStr;
use std::os::raw::c_int;
use std::ptr::{null, null_mut};

use redis_module::raw;

/// One documented argument.
pub struct Arg {
    name: &'static CStr,
    kind: raw::RedisModuleCommandArgType,
    token: Option<&'static CStr>,
    optional: bool,
    /// May repeat (`key [key ...]`).
    multiple: bool,
    /// For `ONEOF` and `BLOCK` arguments.
    subargs: Vec<Arg>,
}

pub fn key() -> Arg {
    arg(
        c"key",
        raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_KEY,
    )
}
pub fn integer(name: &'static CStr) -> Arg {
    arg(
        name,
        raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_INTEGER,
    )
}
pub fn double(name: &'static CStr) -> Arg {
    arg(
        name,
        raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_DOUBLE,
    )
}
pub fn string(name: &'static CStr) -> Arg {
    arg(
        name,
        raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_STRING,
    )
}
/// An optional `TOKEN value` pair.
pub fn option(token: &'static CStr, name: &'static CStr) -> Arg {
    Arg {
        token: Some(token),
        optional: true,
        ..integer(name)
    }
}
/// An optional `TOKEN value` pair whose value is a string.
pub fn string_option(token: &'static CStr, name: &'static CStr) -> Arg {
    Arg {
        token: Some(token),
        optional: true,
        ..string(name)
    }
}
/// An optional bare token, like `PEEK`.
pub fn flag(token: &'static CStr, name: &'static CStr) -> Arg {
    Arg {
        token: Some(token),
        optional: true,
        ..arg(
            name,
            raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_PURE_TOKEN,
        )
    }
}
/// At most one of `choices`.
pub fn one_of(name: &'static CStr, choices: Vec<Arg>) -> Arg {
    Arg {
        optional: true,
        subargs: choices
            .into_iter()
            .map(|a| Arg {
                optional: false,
                ..a
            })
            .collect(),
        ..arg(
            name,
            raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_ONEOF,
        )
    }
}

fn arg(name: &'static CStr, kind: raw::RedisModuleCommandArgType) -> Arg {
    Arg {
        name,
        kind,
        token: None,
        optional: false,
        multiple: false,
        subargs: Vec::new(),
    }
}

/// `arg`, optional.
pub fn optional(arg: Arg) -> Arg {
    Arg {
        optional: true,
        ..arg
    }
}

/// `arg`, required.
pub fn required(arg: Arg) -> Arg {
    Arg {
        optional: false,
        ..arg
    }
}

/// `arg` repeated one or more times.
pub fn many(arg: Arg) -> Arg {
    Arg {
        multiple: true,
        ..arg
    }
}

/// The C form of `args`, ending with the zeroed terminator Redis expects; the
/// nested vectors must outlive the returned one.
fn raw_args(
    args: &[Arg],
    keep: &mut Vec<Vec<raw::RedisModuleCommandArg>>,
) -> Vec<raw::RedisModuleCommandArg> {
    let mut out: Vec<raw::RedisModuleCommandArg> = args
        .iter()
        .map(|a| {
            let subargs = if a.subargs.is_empty() {
                null_mut()
            } else {
                let mut sub = raw_args(&a.subargs, keep);
                let ptr = sub.as_mut_ptr();
                keep.push(sub);
                ptr
            };
            raw::RedisModuleCommandArg {
                name: a.name.as_ptr(),
                type_: a.kind,
                key_spec_index: if a.kind == raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_KEY
                {
                    0
                } else {
                    -1
                },
                token: a.token.map_or(null(), CStr::as_ptr),
                summary: null(),
                since: null(),
                flags: (if a.optional {
                    raw::REDISMODULE_CMD_ARG_OPTIONAL
                } else {
                    0
                } | if a.multiple {
                    raw::REDISMODULE_CMD_ARG_MULTIPLE
                } else {
                    0
                }) as c_int,
                deprecated_since: null(),
                subargs,
                display_text: null(),
            }
        })
        .collect();
    // SAFETY: the all-zero bit pattern is the terminator (null pointers, zero ints).
    out.push(unsafe { std::mem::zeroed() });
    out
}

/// What one command documents.
pub struct Doc {
    pub summary: &'static CStr,
    pub complexity: &'static CStr,
    /// Negative: at least that many arguments, counting the command name.
    pub arity: c_int,
    pub args: Vec<Arg>,
}

/// A key spec declared beyond the registered key range.
#[derive(Clone, Copy)]
pub enum KeySpec {
    /// A read-only command with one key at this index (RL.PEEK).
    ReadAt(c_int),
    /// Keys after a count at this index (RL.ALL).
    Numkeys(c_int),
}

fn zeroed_spec() -> raw::RedisModuleCommandKeySpec {
    // SAFETY: the all-zero bit pattern is a valid key spec (and the list terminator).
    unsafe { std::mem::zeroed() }
}

/// The C form of a key spec: one index to begin at, then the keys.
fn raw_key_spec(spec: KeySpec) -> raw::RedisModuleCommandKeySpec {
    let mut raw_spec = zeroed_spec();
    raw_spec.begin_search_type = raw::RedisModuleKeySpecBeginSearchType_REDISMODULE_KSPEC_BS_INDEX;
    match spec {
        KeySpec::Numkeys(index) => {
            raw_spec.flags = (raw::REDISMODULE_CMD_KEY_RW
                | raw::REDISMODULE_CMD_KEY_ACCESS
                | raw::REDISMODULE_CMD_KEY_UPDATE) as u64;
            raw_spec.bs.index.pos = index;
            raw_spec.find_keys_type =
                raw::RedisModuleKeySpecFindKeysType_REDISMODULE_KSPEC_FK_KEYNUM;
            raw_spec.fk.keynum.keynumidx = 0;
            raw_spec.fk.keynum.firstkey = 1;
            raw_spec.fk.keynum.keystep = 1;
        }
        KeySpec::ReadAt(index) => {
            raw_spec.flags = (raw::REDISMODULE_CMD_KEY_RO | raw::REDISMODULE_CMD_KEY_ACCESS) as u64;
            raw_spec.bs.index.pos = index;
            raw_spec.find_keys_type =
                raw::RedisModuleKeySpecFindKeysType_REDISMODULE_KSPEC_FK_RANGE;
            raw_spec.fk.range.lastkey = 0;
            raw_spec.fk.range.keystep = 1;
            raw_spec.fk.range.limit = 0;
        }
    }
    raw_spec
}

/// Declares `doc` for registered command `name`, with ACL categories `acl`
/// where the server supports them (Redis 7.2+, Valkey; Redis 7.0 gives module
/// commands none); logs and continues if the server refuses.
pub fn declare(
    ctx: *mut raw::RedisModuleCtx,
    name: &CStr,
    acl: &CStr,
    key_spec: Option<KeySpec>,
    doc: &Doc,
) {
    let version = raw::RedisModuleCommandInfoVersion {
        version: 1,
        sizeof_historyentry: std::mem::size_of::<raw::RedisModuleCommandHistoryEntry>(),
        sizeof_keyspec: std::mem::size_of::<raw::RedisModuleCommandKeySpec>(),
        sizeof_arg: std::mem::size_of::<raw::RedisModuleCommandArg>(),
    };
    let mut keep = Vec::new();
    let mut args = raw_args(&doc.args, &mut keep);
    // The spec, then the zeroed terminator.
    let mut key_specs: Vec<raw::RedisModuleCommandKeySpec> = key_spec
        .map(raw_key_spec)
        .into_iter()
        .chain(key_spec.map(|_| zeroed_spec()))
        .collect();
    let mut info = raw::RedisModuleCommandInfo {
        version: &version,
        summary: doc.summary.as_ptr(),
        complexity: doc.complexity.as_ptr(),
        since: c"1.0.0".as_ptr(),
        history: null_mut(),
        tips: null(),
        arity: doc.arity,
        key_specs: if key_specs.is_empty() {
            null_mut()
        } else {
            key_specs.as_mut_ptr()
        },
        args: args.as_mut_ptr(),
    };
    // SAFETY: `ctx` is the OnLoad context; every pointer lives until the call returns.
    let ok = unsafe {
        let cmd = raw::RedisModule_GetCommand.expect("GetCommand")(ctx, name.as_ptr());
        let categorized = match raw::RedisModule_SetCommandACLCategories {
            Some(set) if !cmd.is_null() => set(cmd, acl.as_ptr()) == raw::REDISMODULE_OK as c_int,
            _ => true,
        };
        !cmd.is_null()
            && categorized
            && raw::RedisModule_SetCommandInfo.expect("SetCommandInfo")(cmd, &mut info)
                == raw::REDISMODULE_OK as c_int
    };
    if !ok {
        let msg = format!(
            "rl: could not declare the documentation of {:?}: {}\0",
            name,
            std::io::Error::last_os_error()
        );
        // SAFETY: a NUL-terminated message and a live context.
        unsafe {
            raw::RedisModule_Log.expect("Log")(
                ctx,
                c"warning".as_ptr(),
                c"%s".as_ptr(),
                msg.as_ptr(),
            )
        };
    }
}
