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

/// What one command declares.
pub struct Doc {
    pub name: &'static CStr,
    pub summary: &'static CStr,
    pub complexity: &'static CStr,
    /// Negative: at least that many arguments, counting the command name.
    pub arity: c_int,
    /// `Some(numkeys index)` for a command whose keys follow a count (RL.ALL).
    pub numkeys_at: Option<c_int>,
    /// `Some(index)` for a read-only command with one key at `index` (RL.PEEK).
    pub read_key_at: Option<c_int>,
    pub args: Vec<Arg>,
    /// The ACL categories of a core command with the same flags (`write` plus
    /// `fast` or `slow`), declared where the server supports it (Redis 7.2+,
    /// Valkey); Redis 7.0 gives module commands no categories.
    pub acl: &'static CStr,
}

/// Declares `doc` for its registered command; logs and continues if the server refuses.
pub fn declare(ctx: *mut raw::RedisModuleCtx, doc: &Doc) {
    let version = raw::RedisModuleCommandInfoVersion {
        version: 1,
        sizeof_historyentry: std::mem::size_of::<raw::RedisModuleCommandHistoryEntry>(),
        sizeof_keyspec: std::mem::size_of::<raw::RedisModuleCommandKeySpec>(),
        sizeof_arg: std::mem::size_of::<raw::RedisModuleCommandArg>(),
    };
    let mut keep = Vec::new();
    let mut args = raw_args(&doc.args, &mut keep);
    let mut key_specs: Vec<raw::RedisModuleCommandKeySpec> = Vec::new();
    if let Some(index) = doc.numkeys_at {
        // SAFETY: zeroed is a valid key spec (and the list terminator).
        let mut spec: raw::RedisModuleCommandKeySpec = unsafe { std::mem::zeroed() };
        spec.flags = (raw::REDISMODULE_CMD_KEY_RW
            | raw::REDISMODULE_CMD_KEY_ACCESS
            | raw::REDISMODULE_CMD_KEY_UPDATE) as u64;
        spec.begin_search_type = raw::RedisModuleKeySpecBeginSearchType_REDISMODULE_KSPEC_BS_INDEX;
        spec.bs.index.pos = index;
        spec.find_keys_type = raw::RedisModuleKeySpecFindKeysType_REDISMODULE_KSPEC_FK_KEYNUM;
        spec.fk.keynum.keynumidx = 0;
        spec.fk.keynum.firstkey = 1;
        spec.fk.keynum.keystep = 1;
        key_specs.push(spec);
        key_specs.push(unsafe { std::mem::zeroed() });
    }
    if let Some(index) = doc.read_key_at {
        // SAFETY: zeroed is a valid key spec (and the list terminator).
        let mut spec: raw::RedisModuleCommandKeySpec = unsafe { std::mem::zeroed() };
        spec.flags = (raw::REDISMODULE_CMD_KEY_RO | raw::REDISMODULE_CMD_KEY_ACCESS) as u64;
        spec.begin_search_type = raw::RedisModuleKeySpecBeginSearchType_REDISMODULE_KSPEC_BS_INDEX;
        spec.bs.index.pos = index;
        spec.find_keys_type = raw::RedisModuleKeySpecFindKeysType_REDISMODULE_KSPEC_FK_RANGE;
        spec.fk.range.lastkey = 0;
        spec.fk.range.keystep = 1;
        spec.fk.range.limit = 0;
        key_specs.push(spec);
        key_specs.push(unsafe { std::mem::zeroed() });
    }
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
        let cmd = raw::RedisModule_GetCommand.expect("GetCommand")(ctx, doc.name.as_ptr());
        let categorized = match raw::RedisModule_SetCommandACLCategories {
            Some(set) if !cmd.is_null() => {
                set(cmd, doc.acl.as_ptr()) == raw::REDISMODULE_OK as c_int
            }
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
            doc.name,
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

/// The options every decision command takes after its parameters.
fn decision_options() -> Vec<Arg> {
    vec![
        one_of(
            c"amount",
            vec![option(c"COST", c"cost"), option(c"REFUND", c"refund")],
        ),
        flag(c"PEEK", c"peek"),
        option(c"BLOCK", c"ms"),
    ]
}

/// The documentation of every command.
pub fn all_docs() -> Vec<Doc> {
    let doc = |name, summary, params: Vec<Arg>| {
        let arity = -(2 + params.len() as c_int);
        let mut args = vec![key()];
        args.extend(params);
        Doc {
            name,
            summary,
            complexity: c"O(1)",
            arity,
            numkeys_at: None,
            read_key_at: None,
            args,
            acl: c"write fast",
        }
    };
    let mut gcra = doc(
        c"rl.gcra",
        c"GCRA: limit requests per period, evenly spaced, with bursts of up to burst",
        vec![integer(c"limit"), string(c"period")],
    );
    gcra.args.push(option(c"BURST", c"burst"));
    let mut docs = vec![
        gcra,
        doc(
            c"rl.tokenbucket",
            c"Token bucket: capacity tokens, refill per period",
            vec![integer(c"capacity"), integer(c"refill"), string(c"period")],
        ),
        doc(
            c"rl.leaky",
            c"Leaky bucket as a queue: admits up to capacity and tells each request when to run",
            vec![integer(c"capacity"), integer(c"leak"), string(c"period")],
        ),
        doc(
            c"rl.sliding",
            c"Sliding window counter: limit per window, weighted across two windows",
            vec![integer(c"limit"), string(c"window")],
        ),
        Doc {
            complexity:
                c"O(log N), N the entries in the log; a write also removes up to 64 lapsed entries",
            acl: c"write slow",
            ..doc(
                c"rl.slidinglog",
                c"Exact sliding log: limit per window, one entry per admitted request",
                vec![integer(c"limit"), string(c"window")],
            )
        },
        doc(
            c"rl.fixed",
            c"Fixed window counter: limit per window aligned to the epoch",
            vec![integer(c"limit"), string(c"window")],
        ),
    ];
    for d in &mut docs {
        d.args.extend(decision_options());
    }
    docs.push(Doc {
        name: c"rl.acquire",
        summary: c"In-flight limit: hold one of limit leases for at most timeout (renews a held lease_id)",
        complexity: c"O(log N), N the leases stored; a write also removes up to 64 lapsed leases",
        arity: -5,
        numkeys_at: None,
        read_key_at: None,
        args: vec![key(), integer(c"limit"), string(c"timeout"), string(c"lease_id"), flag(c"PEEK", c"peek"), option(c"BLOCK", c"ms")],
        acl: c"write fast",
    });
    docs.push(Doc {
        name: c"rl.release",
        summary: c"Releases a lease taken with RL.ACQUIRE: 1 if it was held, else 0",
        complexity: c"O(log N), N the leases stored; a write also removes up to 64 lapsed leases",
        arity: 3,
        numkeys_at: None,
        read_key_at: None,
        args: vec![key(), string(c"lease_id")],
        acl: c"write fast",
    });
    docs.push(Doc {
        name: c"cl.throttle",
        summary: c"redis-cell's GCRA throttle: replies [limited, limit, remaining, retry_after s, reset_after s]",
        complexity: c"O(1)",
        arity: -5,
        numkeys_at: None,
        read_key_at: None,
        args: vec![
            key(),
            integer(c"max_burst"),
            integer(c"count"),
            integer(c"period"),
            Arg { optional: true, ..integer(c"quantity") },
        ],
        acl: c"write fast",
    });
    docs.push(Doc {
        name: c"rl.peek",
        summary: c"Read-only: replies what RL.<ALGO> key params ... PEEK replies, writing nothing (works on replicas and in read-only scripts)",
        complexity: c"O(1) (RL.SLIDINGLOG and ACQUIRE: O(log N))",
        arity: -5,
        numkeys_at: None,
        read_key_at: Some(2),
        args: vec![
            string(c"algorithm"),
            key(),
            many(string(c"param")),
        ],
        acl: c"read fast",
    });
    docs.push(Doc {
        name: c"rl.all",
        summary: c"Several limiters decided as one: writes only if every layer admits",
        complexity: c"O(K) for K layers, plus each layer's own cost",
        arity: -6,
        numkeys_at: Some(1),
        read_key_at: None,
        args: vec![
            integer(c"numkeys"),
            many(key()),
            many(string(c"clause")),
            flag(c"PEEK", c"peek"),
        ],
        acl: c"write slow",
    });
    docs
}
