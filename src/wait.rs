//! `BLOCK ms`: a request that would be denied waits inside the server until it
//! is admitted or `ms` passes, then gets the ordinary reply.
//!
//! Per key (database and name) a FIFO queue of waiters, and one module timer,
//! set to the moment the head can be admitted (or the earliest deadline in the
//! queue). Admissions happen only in that timer's callback, head first, each
//! decided, written and replicated as an ordinary admitted call at that instant
//! through the key API ([`crate::store::Key`], so effects, keyspace events and
//! signals are those of a non-blocking call). Wakeups (`RL.RELEASE`, `REFUND`,
//! a `DEL` or other generic change of the key, a waiter leaving the head) only
//! move the timer to now. Clients are blocked with no server timeout (Redis 7.0
//! handles timeouts before module unblocks in the same pass): deadlines are the
//! module's own, kept by the same timer.
//!
//! Fairness: while a key has waiters, a call that spends on it (cost above 0,
//! no `REFUND`, not a renewal of a held lease) is queued behind them: with
//! `BLOCK` it joins the tail; without, it is denied ([`queued`]).
//!
//! Everything here runs on Redis's main thread.

use std::cell::{Cell, RefCell};
use std::collections::{HashMap, VecDeque};
use std::os::raw::{c_char, c_int, c_void};
use std::panic::{catch_unwind, AssertUnwindSafe};

use redis_module::raw;

use crate::algorithm::lease::{Lease, LeaseWrite};
use crate::algorithm::{Decision, Wait, NANOS_PER_MS};
use crate::args::{self, Kind, Request};
use crate::command::{reply_error, reply_integers, with_bytes};
use crate::decision::{self, Write};
use crate::error::RlError;
use crate::lease;
use crate::ledger::Token;
use crate::server_info::ServerInfo;
use crate::store::{arg_bytes, lease_member, Key};
use crate::{clock, config, stats};

macro_rules! api {
    ($name:ident($($arg:expr),* $(,)?)) => {
        // SAFETY: the pointers passed are live for the current callback or
        // command; the function exists on every supported server.
        unsafe { raw::$name.expect(stringify!($name))($($arg),*) }
    };
}

/// What a waiter (or any call on a key with waiters) asks of its key.
pub enum Claim {
    Decision { kind: Kind, request: Request },
    Acquire { lease: Lease, member: Vec<u8> },
}

/// A claim's decision and, if admitted, its write.
struct Step {
    decision: Decision,
    write: Option<ClaimWrite>,
}

enum ClaimWrite {
    Decision(Write),
    Lease(LeaseWrite),
}

impl Claim {
    pub fn acquire(lease: Lease, member: &[u8]) -> Claim {
        Claim::Acquire {
            lease,
            member: member.to_vec(),
        }
    }

    fn label(&self) -> &'static str {
        match self {
            Claim::Decision { kind, .. } => kind.label(),
            Claim::Acquire { .. } => "RL.ACQUIRE",
        }
    }

    fn cost(&self) -> u64 {
        match self {
            Claim::Decision { request, .. } if request.refund => 0,
            Claim::Decision { request, .. } => request.cost,
            Claim::Acquire { .. } => 1,
        }
    }

    /// True if the claim takes capacity: it must queue behind waiters.
    fn spends(&self, key: &Key, now: u64) -> Result<bool, RlError> {
        match self {
            Claim::Decision { request, .. } => Ok(request.cost > 0 && !request.refund),
            Claim::Acquire { member, .. } => Ok(!lease::is_held(key, member, now)?),
        }
    }

    fn decide(&self, key: &Key, now: u64) -> Result<Step, RlError> {
        match self {
            Claim::Decision { kind, request } => {
                let p = decision::decide(key, *kind, request, now)?;
                Ok(Step {
                    decision: p.decision,
                    write: p.write.map(ClaimWrite::Decision),
                })
            }
            Claim::Acquire { lease: l, member } => {
                let o = lease::decide_acquire(key, l, member, now)?;
                Ok(Step {
                    decision: o.decision,
                    write: o.write.map(ClaimWrite::Lease),
                })
            }
        }
    }

    fn commit(&self, key: &Key, write: &ClaimWrite) {
        match (self, write) {
            (_, ClaimWrite::Decision(w)) => decision::commit(key, w),
            (Claim::Acquire { member, .. }, ClaimWrite::Lease(w)) => {
                lease::commit_acquire(key, member, w)
            }
            (Claim::Decision { .. }, ClaimWrite::Lease(_)) => {}
        }
    }
}

struct Waiter {
    bc: *mut raw::RedisModuleBlockedClient,
    claim: Claim,
    /// Nanoseconds since the epoch; `None` for `BLOCK 0`.
    deadline_ns: Option<u64>,
    /// Names the wait in `INFO rl`'s bookkeeping.
    token: Token,
}

struct Queue {
    db: c_int,
    name: Vec<u8>,
    waiters: VecDeque<Waiter>,
    /// The key's timer and when it fires (ms since the epoch).
    timer: Option<(raw::RedisModuleTimerID, u64)>,
}

#[derive(Default)]
struct State {
    queues: HashMap<u64, Queue>,
    /// (db, key name) -> queue id.
    index: HashMap<c_int, HashMap<Vec<u8>, u64>>,
    /// Blocked client -> queue id.
    by_client: HashMap<usize, u64>,
    next_id: u64,
    subscribed: bool,
}

thread_local! {
    static STATE: RefCell<State> = RefCell::new(State::default());
    /// Clients waiting now (the `INFO rl` gauge); zero means no call pays for waiting.
    static WAITING: Cell<usize> = const { Cell::new(0) };
    /// Set while a timer admits waiters: keyspace events it causes are its own.
    static IN_WAKE: Cell<bool> = const { Cell::new(false) };
}

/// True if some client waits anywhere (one thread-local load).
pub fn active() -> bool {
    WAITING.with(Cell::get) > 0
}

/// The number of clients waiting now.
pub fn waiting() -> usize {
    WAITING.with(Cell::get)
}

fn db_of(ctx: *mut raw::RedisModuleCtx) -> c_int {
    api!(RedisModule_GetSelectedDb(ctx))
}

fn queue_of(db: c_int, name: &[u8]) -> Option<u64> {
    STATE.with(|s| s.borrow().index.get(&db)?.get(name).copied())
}

/// The number of clients waiting on queue `qid`.
fn queue_len(qid: u64) -> usize {
    STATE.with(|s| s.borrow().queues.get(&qid).map_or(0, |q| q.waiters.len()))
}

/// If `claim` spends on a key that has waiters, the denial it gets behind them:
/// remaining `0`, and `retry_after` the longer of its own wait and the head
/// waiter's (at least 1 ms). `None`: decide as usual.
pub fn queued(
    ctx: *mut raw::RedisModuleCtx,
    name: *mut raw::RedisModuleString,
    key: &Key,
    claim: &Claim,
    own: &Decision,
    now: u64,
) -> Result<Option<Decision>, RlError> {
    let Some(qid) = queue_of(db_of(ctx), arg_bytes(name)) else {
        return Ok(None);
    };
    if !claim.spends(key, now)? {
        return Ok(None);
    }
    let head_wait = STATE.with(|s| {
        let s = s.borrow();
        let head = s.queues.get(&qid).and_then(|q| q.waiters.front());
        head.map(|w| w.claim.decide(key, now).map(|step| step.decision))
    });
    let head_wait = match head_wait {
        Some(Ok(d)) if !d.allowed => wait_ns(d.retry_after),
        _ => 0,
    };
    Ok(Some(behind(own, head_wait)))
}

/// A denial that no wait can turn into an admission (`cost > limit`).
fn never(d: &Decision) -> bool {
    !d.allowed && d.retry_after == Wait::Never
}

fn wait_ns(w: Wait) -> u128 {
    match w {
        Wait::After(ns) => ns,
        Wait::Never => u128::MAX,
    }
}

/// `own` as a denial behind a queue whose head is admitted in `head_wait` ns.
fn behind(own: &Decision, head_wait: u128) -> Decision {
    let retry_after = match own.retry_after {
        Wait::Never if !own.allowed => Wait::Never,
        w => {
            let mine = if own.allowed { 0 } else { wait_ns(w) };
            Wait::After(mine.max(head_wait).max(1))
        }
    };
    Decision {
        allowed: false,
        remaining: 0,
        retry_after,
        ..*own
    }
}

/// Applies [`queued`] to a pending decision, dropping its write if it is now denied.
pub fn queue_ahead(
    ctx: *mut raw::RedisModuleCtx,
    name: *mut raw::RedisModuleString,
    key: &Key,
    claim: &Claim,
    now: u64,
    out: &mut crate::algorithm::Outcome<LeaseWrite>,
) -> Result<(), RlError> {
    if let Some(d) = queued(ctx, name, key, claim, &out.decision, now)? {
        out.decision = d;
        out.write = None;
    }
    Ok(())
}

/// Wakes the waiters of key `name` (in the caller's database): their timer fires now.
pub fn wake(ctx: *mut raw::RedisModuleCtx, name: *mut raw::RedisModuleString) {
    if IN_WAKE.with(Cell::get) {
        return;
    }
    if let Some(qid) = queue_of(db_of(ctx), arg_bytes(name)) {
        schedule(ctx, qid, 0);
    }
}

/// (Re)arms queue `qid`'s timer to fire in `delay_ms`, unless it already fires
/// by then.
fn schedule(ctx: *mut raw::RedisModuleCtx, qid: u64, delay_ms: u64) {
    let at = clock_ms().saturating_add(delay_ms);
    STATE.with(|s| {
        let mut s = s.borrow_mut();
        let Some(q) = s.queues.get_mut(&qid) else {
            return;
        };
        if let Some((id, when)) = q.timer {
            if when <= at {
                return;
            }
            api!(RedisModule_StopTimer(ctx, id, std::ptr::null_mut()));
        }
        let period = delay_ms.min(i64::MAX as u64) as raw::mstime_t;
        let id = api!(RedisModule_CreateTimer(
            ctx,
            period,
            Some(on_timer),
            qid as usize as *mut c_void
        ));
        q.timer = Some((id, at));
    });
}

fn clock_ms() -> u64 {
    clock::now_ns() / NANOS_PER_MS
}

/// Where the command's options start, and whether the caller asked to block.
pub fn wants_block(argv: &[*mut raw::RedisModuleString], first_option: usize) -> bool {
    argv.len() > first_option
        && argv[first_option..]
            .iter()
            .any(|&a| arg_bytes(a).eq_ignore_ascii_case(b"BLOCK"))
}

/// What a blocking call runs: a decision command or `RL.ACQUIRE`.
#[derive(Clone, Copy)]
pub enum Target {
    Decision(Kind),
    Acquire,
}

impl Target {
    fn label(self) -> &'static str {
        match self {
            Target::Decision(k) => k.label(),
            Target::Acquire => "RL.ACQUIRE",
        }
    }
    fn first_option(self) -> usize {
        match self {
            Target::Decision(k) => k.min_argc(),
            Target::Acquire => 5,
        }
    }
    fn command(self) -> &'static str {
        match self {
            Target::Decision(k) => k.command(),
            Target::Acquire => "rl.acquire",
        }
    }
}

enum Begun {
    Reply([i64; 5]),
    Blocked,
}

/// A call with `BLOCK ms`: decided at once where Redis cannot block (or need
/// not), else queued.
pub fn dispatch(
    ctx: *mut raw::RedisModuleCtx,
    argv: &[*mut raw::RedisModuleString],
    target: Target,
) -> c_int {
    let label = target.label();
    let result = catch_unwind(AssertUnwindSafe(|| begin(ctx, argv, target)))
        .unwrap_or(Err(RlError::Internal(label)));
    match result {
        Ok(Begun::Blocked) => raw::REDISMODULE_OK as c_int,
        Ok(Begun::Reply(values)) => {
            stats::call(label, false);
            reply_integers(ctx, &values)
        }
        Err(e) => {
            stats::call(label, true);
            reply_error(ctx, &e)
        }
    }
}

/// Contexts in which a call never waits (as `BLPOP` does not).
const NO_WAIT: u32 = raw::REDISMODULE_CTX_FLAGS_MULTI
    | raw::REDISMODULE_CTX_FLAGS_LUA
    | raw::REDISMODULE_CTX_FLAGS_DENY_BLOCKING
    | raw::REDISMODULE_CTX_FLAGS_REPLICATED
    | raw::REDISMODULE_CTX_FLAGS_SLAVE
    | raw::REDISMODULE_CTX_FLAGS_LOADING;

fn begin(
    ctx: *mut raw::RedisModuleCtx,
    argv: &[*mut raw::RedisModuleString],
    target: Target,
) -> Result<Begun, RlError> {
    if argv.len() < target.first_option() {
        return Err(RlError::WrongArity(target.command()));
    }
    let (claim, peek, block_ms) = with_bytes(&argv[2..], |params| {
        let caps = config::caps();
        Ok::<_, RlError>(match target {
            Target::Decision(kind) => {
                let request = args::parse(kind, params, caps)?;
                let block_ms = request.block.unwrap_or(0);
                (Claim::Decision { kind, request }, request.peek, block_ms)
            }
            Target::Acquire => {
                let a = lease::parse_acquire(params, caps)?;
                let claim = Claim::acquire(a.lease, &lease_member(params[2]));
                (claim, a.peek, a.block.unwrap_or(0))
            }
        })
    })?;
    let now = clock::now_ns();
    let name = argv[1];
    let key = Key::open(ctx, name).ok_or(RlError::Internal(target.label()))?;
    let mut step = claim.decide(&key, now)?;
    let db = db_of(ctx);
    let queue = queue_of(db, arg_bytes(name));
    let waiting_here = queue.is_some();
    let flags = api!(RedisModule_GetContextFlags(ctx)) as u32;
    let can_wait = flags & NO_WAIT == 0
        && !peek
        && claim.spends(&key, now)?
        && !never(&step.decision)
        && (waiting_here || !step.decision.allowed)
        && waiting() < config::max_waiters()
        && queue.map_or(0, queue_len) < config::max_waiters_per_key()
        && api!(RedisModule_AvoidReplicaTraffic()) == 0;
    if !can_wait {
        if waiting_here {
            if let Some(d) = queued(ctx, name, &key, &claim, &step.decision, now)? {
                step = Step {
                    decision: d,
                    write: None,
                };
            }
        }
        if let (false, Some(w)) = (peek, &step.write) {
            claim.commit(&key, w);
        }
        if let Claim::Decision { request, .. } = &claim {
            if request.refund && !peek && step.write.is_some() {
                drop(key);
                wake(ctx, name);
            }
        }
        stats::decision(target.label(), step.decision.allowed, claim.cost());
        return Ok(Begun::Reply(step.decision.reply()));
    }
    drop(key);
    let head_wait = match waiting_here {
        true => None,
        false => Some(wait_ns(step.decision.retry_after)),
    };
    enqueue(ctx, db, arg_bytes(name), claim, now, block_ms, head_wait);
    Ok(Begun::Blocked)
}

/// Blocks the client and queues it at the tail of its key's queue.
fn enqueue(
    ctx: *mut raw::RedisModuleCtx,
    db: c_int,
    name: &[u8],
    claim: Claim,
    now: u64,
    block_ms: u64,
    head_wait_ns: Option<u128>,
) {
    let token = stats::blocked(claim.label());
    let bc = api!(RedisModule_BlockClient(
        ctx,
        Some(on_reply),
        Some(on_timeout),
        Some(free_privdata),
        0
    ));
    api!(RedisModule_SetDisconnectCallback(bc, Some(on_disconnect)));
    let deadline_ns =
        (block_ms > 0).then(|| now.saturating_add(block_ms.saturating_mul(NANOS_PER_MS)));
    let qid = STATE.with(|s| {
        let mut s = s.borrow_mut();
        let s = &mut *s;
        if !s.subscribed {
            s.subscribed = true;
            api!(RedisModule_SubscribeToKeyspaceEvents(
                ctx,
                (raw::REDISMODULE_NOTIFY_GENERIC
                    | raw::REDISMODULE_NOTIFY_EXPIRED
                    | raw::REDISMODULE_NOTIFY_EVICTED) as c_int,
                Some(on_keyspace)
            ));
        }
        let per_db = s.index.entry(db).or_default();
        let qid = match per_db.get(name) {
            Some(&qid) => qid,
            None => {
                s.next_id += 1;
                let qid = s.next_id;
                per_db.insert(name.to_vec(), qid);
                s.queues.insert(
                    qid,
                    Queue {
                        db,
                        name: name.to_vec(),
                        waiters: VecDeque::new(),
                        timer: None,
                    },
                );
                qid
            }
        };
        s.by_client.insert(bc as usize, qid);
        let q = s.queues.get_mut(&qid).expect("queue just found or made");
        q.waiters.push_back(Waiter {
            bc,
            claim,
            deadline_ns,
            token,
        });
        qid
    });
    WAITING.with(|w| w.set(w.get() + 1));
    let mut delay_ns = deadline_ns.map_or(u128::MAX, |d| (d - now) as u128);
    if let Some(head) = head_wait_ns {
        delay_ns = delay_ns.min(head);
    }
    if delay_ns != u128::MAX {
        schedule(ctx, qid, ms_ceil(delay_ns));
    }
}

fn ms_ceil(ns: u128) -> u64 {
    ns.div_ceil(NANOS_PER_MS as u128).min(u64::MAX as u128 / 2) as u64
}

/// How a wait ended: the reply the client gets.
struct Finished {
    label: &'static str,
    reply: Result<[i64; 5], String>,
    allowed: bool,
    cost: u64,
    token: Token,
}

fn unblock(bc: *mut raw::RedisModuleBlockedClient, finished: Finished) {
    let data = Box::into_raw(Box::new(finished));
    api!(RedisModule_UnblockClient(bc, data.cast()));
}

/// The timer of one key: admits waiters from the head while they are
/// admissible, ends the waits whose deadline has passed, and re-arms itself.
extern "C" fn on_timer(ctx: *mut raw::RedisModuleCtx, data: *mut c_void) {
    let qid = data as usize as u64;
    IN_WAKE.with(|w| w.set(true));
    let _ = catch_unwind(AssertUnwindSafe(|| run_queue(ctx, qid)));
    IN_WAKE.with(|w| w.set(false));
}

fn run_queue(ctx: *mut raw::RedisModuleCtx, qid: u64) {
    let Some((db, name)) = STATE.with(|s| {
        let mut s = s.borrow_mut();
        let q = s.queues.get_mut(&qid)?;
        q.timer = None;
        Some((q.db, q.name.clone()))
    }) else {
        return;
    };
    let paused = api!(RedisModule_AvoidReplicaTraffic()) != 0;
    api!(RedisModule_SelectDb(ctx, db));
    let name_str = api!(RedisModule_CreateString(
        ctx,
        name.as_ptr().cast(),
        name.len()
    ));
    let mut next: Option<u128> = None;
    if let Some(key) = Key::open(ctx, name_str) {
        // Read after the open: outside a command the server's clock is not
        // frozen, and the open may have expired the key as of its own reading.
        let now = clock::now_ns();
        let full = out_of_memory(ctx);
        next = STATE.with(|s| {
            let mut s = s.borrow_mut();
            let s = &mut *s;
            let q = s.queues.get_mut(&qid)?;
            let (next, finished) = settle(q, &key, now, paused, full);
            for bc in finished {
                s.by_client.remove(&(bc as usize));
            }
            next
        });
        drop(key);
    }
    api!(RedisModule_FreeString(ctx, name_str));
    let empty = STATE.with(|s| {
        let mut s = s.borrow_mut();
        let empty = s.queues.get(&qid).is_some_and(|q| q.waiters.is_empty());
        if empty {
            remove_queue(&mut s, qid);
        }
        empty
    });
    if !empty {
        let delay = match (paused, next) {
            // Clients are paused (a failover, `CLIENT PAUSE`): look again soon.
            (true, n) => n.map_or(100, |n| ms_ceil(n).min(100)),
            (false, Some(n)) => ms_ceil(n),
            (false, None) => return,
        };
        schedule(ctx, qid, delay);
    }
}

/// True if an admission now would be refused as a `deny-oom` command is: the
/// server is above `maxmemory` and its policy evicts nothing. (Under an
/// eviction policy the next command's eviction makes room, as for any write.)
fn out_of_memory(ctx: *mut raw::RedisModuleCtx) -> bool {
    let flags = api!(RedisModule_GetContextFlags(ctx)) as u32;
    flags & raw::REDISMODULE_CTX_FLAGS_OOM != 0 && policy_is_noeviction()
}

/// `maxmemory-policy` is `noeviction` (read from `INFO memory`, only when the
/// server is above `maxmemory`).
fn policy_is_noeviction() -> bool {
    ServerInfo::read(c"memory")
        .and_then(|info| info.field(c"maxmemory_policy").map(|p| p == b"noeviction"))
        .unwrap_or(true)
}

fn remove_queue(s: &mut State, qid: u64) {
    if let Some(q) = s.queues.remove(&qid) {
        if let Some(per_db) = s.index.get_mut(&q.db) {
            per_db.remove(&q.name);
            if per_db.is_empty() {
                s.index.remove(&q.db);
            }
        }
    }
}

/// Admits from the head and ends lapsed waits; returns the delay until the
/// queue needs looking at again, and the clients whose wait ended.
fn settle(
    q: &mut Queue,
    key: &Key,
    now: u64,
    paused: bool,
    out_of_memory: bool,
) -> (Option<u128>, Vec<*mut raw::RedisModuleBlockedClient>) {
    let mut done = Vec::new();
    let mut head_wait: u128;
    loop {
        head_wait = u128::MAX;
        // Admit from the head.
        while let Some(head) = q.waiters.front() {
            match head.claim.decide(key, now) {
                Ok(step) if step.decision.allowed && !paused && !out_of_memory => {
                    if let Some(w) = &step.write {
                        head.claim.commit(key, w);
                    }
                    let w = q.waiters.pop_front().expect("head");
                    finish(&w, Ok(step.decision), true);
                    done.push(w.bc);
                }
                Ok(step) if step.decision.allowed && !paused && out_of_memory => {
                    // As a `deny-oom` command woken from `BLPOP`-style waiting
                    // is refused: the wait ends with `-OOM`, nothing spent.
                    let w = q.waiters.pop_front().expect("head");
                    finish(&w, Err(RlError::Oom), false);
                    done.push(w.bc);
                }
                Ok(step) if step.decision.allowed => {
                    head_wait = 0;
                    break;
                }
                Ok(step) if matches!(step.decision.retry_after, Wait::Never) => {
                    let w = q.waiters.pop_front().expect("head");
                    finish(&w, Ok(step.decision), false);
                    done.push(w.bc);
                }
                Ok(step) => {
                    head_wait = wait_ns(step.decision.retry_after);
                    break;
                }
                Err(e) => {
                    let w = q.waiters.pop_front().expect("head");
                    finish(&w, Err(e), false);
                    done.push(w.bc);
                }
            }
        }
        // End the waits whose deadline has passed, with the denial each gets now.
        let mut head_left = false;
        let mut i = 0;
        while i < q.waiters.len() {
            if q.waiters[i].deadline_ns.is_some_and(|d| d <= now) {
                let w = q.waiters.remove(i).expect("index in range");
                let reply = w.claim.decide(key, now).map(|step| {
                    if i == 0 && !step.decision.allowed {
                        step.decision
                    } else {
                        behind(&step.decision, head_wait)
                    }
                });
                finish(&w, reply, false);
                done.push(w.bc);
                head_left |= i == 0;
            } else {
                i += 1;
            }
        }
        if !head_left || q.waiters.is_empty() {
            break;
        }
    }
    let deadline = q
        .waiters
        .iter()
        .filter_map(|w| w.deadline_ns)
        .min()
        .map(|d| (d - now.min(d)) as u128);
    let next = match (q.waiters.is_empty(), deadline) {
        (true, _) => None,
        (false, Some(d)) => Some(d.min(head_wait)),
        (false, None) => (head_wait != u128::MAX).then_some(head_wait),
    };
    (next, done)
}

/// Ends waiter `w`'s wait (taken out of its queue) with `reply`, releasing its handle.
fn finish(w: &Waiter, reply: Result<Decision, RlError>, admitted: bool) {
    WAITING.with(|c| c.set(c.get().saturating_sub(1)));
    let (reply, allowed) = match reply {
        Ok(d) => (Ok(d.reply()), d.allowed && admitted),
        Err(e) => (Err(e.to_string()), false),
    };
    unblock(
        w.bc,
        Finished {
            label: w.claim.label(),
            reply,
            allowed,
            cost: w.claim.cost(),
            token: w.token,
        },
    );
}

/// Sends a finished wait's reply.
extern "C" fn on_reply(
    ctx: *mut raw::RedisModuleCtx,
    _argv: *mut *mut raw::RedisModuleString,
    _argc: c_int,
) -> c_int {
    let data = api!(RedisModule_GetBlockedClientPrivateData(ctx)) as *const Finished;
    if data.is_null() {
        return raw::REDISMODULE_OK as c_int;
    }
    // SAFETY: set by `unblock` from a boxed `Finished`; freed by `free_privdata` after this.
    let f = unsafe { &*data };
    send(ctx, f)
}

fn send(ctx: *mut raw::RedisModuleCtx, f: &Finished) -> c_int {
    count(f);
    match &f.reply {
        Ok(values) => reply_integers(ctx, values),
        Err(text) => {
            let text = std::ffi::CString::new(text.as_str())
                .unwrap_or_else(|_| c"ERR invalid request".into());
            api!(RedisModule_ReplyWithError(ctx, text.as_ptr()));
            raw::REDISMODULE_OK as c_int
        }
    }
}

/// Counts a finished wait in `INFO rl` (once: when it is sent, or when its
/// client went away before it could be).
fn count(f: &Finished) {
    if f.reply.is_ok() {
        stats::decision(f.label, f.allowed, f.cost);
    }
    stats::waited(f.token);
    stats::call(f.label, f.reply.is_err());
}

extern "C" fn free_privdata(_ctx: *mut raw::RedisModuleCtx, data: *mut c_void) {
    if !data.is_null() {
        // SAFETY: `data` came from `Box::into_raw` in `unblock`, freed once here.
        drop(unsafe { Box::from_raw(data.cast::<Finished>()) });
    }
}

/// A waiter taken out of its queue.
struct Taken {
    waiter: Waiter,
    qid: u64,
    was_head: bool,
    /// The key's name.
    name: Vec<u8>,
}

/// Removes the waiter of client `bc` (and its queue and timer, if now empty).
fn take_waiter(
    ctx: *mut raw::RedisModuleCtx,
    bc: *mut raw::RedisModuleBlockedClient,
) -> Option<Taken> {
    STATE.with(|s| {
        let mut s = s.borrow_mut();
        let qid = s.by_client.remove(&(bc as usize))?;
        let q = s.queues.get_mut(&qid)?;
        let i = q.waiters.iter().position(|w| w.bc == bc)?;
        let waiter = q.waiters.remove(i)?;
        let name = q.name.clone();
        let empty = q.waiters.is_empty();
        if empty {
            if let Some((id, _)) = q.timer {
                api!(RedisModule_StopTimer(ctx, id, std::ptr::null_mut()));
            }
            remove_queue(&mut s, qid);
        }
        WAITING.with(|c| c.set(c.get().saturating_sub(1)));
        Some(Taken {
            waiter,
            qid,
            was_head: i == 0 && !empty,
            name,
        })
    })
}

/// `CLIENT UNBLOCK id` (the server gives no other timeout): the wait ends with
/// the denial the request gets at this instant; nothing is spent.
extern "C" fn on_timeout(
    ctx: *mut raw::RedisModuleCtx,
    _argv: *mut *mut raw::RedisModuleString,
    _argc: c_int,
) -> c_int {
    let data = api!(RedisModule_GetBlockedClientPrivateData(ctx)) as *const Finished;
    if !data.is_null() {
        // Already admitted or ended: that reply stands.
        // SAFETY: as in `on_reply`.
        return send(ctx, unsafe { &*data });
    }
    let bc = api!(RedisModule_GetBlockedClientHandle(ctx));
    let Some(Taken {
        waiter: w,
        qid,
        was_head,
        name,
    }) = take_waiter(ctx, bc)
    else {
        return reply_error(ctx, &RlError::Syntax("wait ended"));
    };
    let label = w.claim.label();
    let result = catch_unwind(AssertUnwindSafe(|| {
        let name_str = api!(RedisModule_CreateString(
            ctx,
            name.as_ptr().cast(),
            name.len()
        ));
        let now = clock::now_ns();
        let reply = Key::open(ctx, name_str).map(|key| {
            w.claim
                .decide(&key, now)
                .map(|step| match was_head && !step.decision.allowed {
                    true => step.decision,
                    false => behind(&step.decision, 0),
                })
        });
        api!(RedisModule_FreeString(ctx, name_str));
        reply
    }))
    .ok()
    .flatten()
    .unwrap_or(Err(RlError::Internal(label)));
    if was_head {
        schedule(ctx, qid, 0);
    }
    let finished = Finished {
        label,
        allowed: false,
        cost: w.claim.cost(),
        token: w.token,
        reply: result.map(|d| d.reply()).map_err(|e| e.to_string()),
    };
    let sent = send(ctx, &finished);
    // The reply is sent; the handle is still the module's to release.
    release(bc);
    sent
}

/// Releases the handle of a blocked client whose wait ended without an
/// admission reply (its client is gone or was answered already). Invariant:
/// every handle is released exactly once, by whoever takes its waiter out of
/// [`STATE`] (`unblock` for the waits the module ends).
fn release(bc: *mut raw::RedisModuleBlockedClient) {
    api!(RedisModule_UnblockClient(bc, std::ptr::null_mut()));
}

/// The client went away (or `CLIENT UNBLOCK … ERROR`, or a role change ended
/// the wait): it loses its place and spends nothing.
extern "C" fn on_disconnect(ctx: *mut raw::RedisModuleCtx, bc: *mut raw::RedisModuleBlockedClient) {
    let _ = catch_unwind(AssertUnwindSafe(|| {
        if let Some(taken) = take_waiter(ctx, bc) {
            release(bc);
            stats::abandoned(taken.waiter.claim.label(), taken.waiter.token);
            if taken.was_head {
                schedule(ctx, taken.qid, 0);
            }
            return;
        }
        // The module had ended the wait (its handle is released), but the
        // client left before the reply was sent: the wait is counted here.
        let data = api!(RedisModule_GetBlockedClientPrivateData(ctx)) as *const Finished;
        if !data.is_null() {
            // SAFETY: as in `on_reply`; freed by `free_privdata` after this.
            count(unsafe { &*data });
        }
    }));
}

/// A generic keyspace event (`del`, `expire`, `rename`, ...), an expiry or an
/// eviction of a key with waiters: look at its queue now.
extern "C" fn on_keyspace(
    ctx: *mut raw::RedisModuleCtx,
    _type: c_int,
    _event: *const c_char,
    key: *mut raw::RedisModuleString,
) -> c_int {
    if active() && !IN_WAKE.with(Cell::get) {
        let _ = catch_unwind(AssertUnwindSafe(|| wake(ctx, key)));
    }
    raw::REDISMODULE_OK as c_int
}

/// Wakes every queue whose database `touched` says was replaced wholesale:
/// each is decided again on its key's new state, at once.
fn wake_databases(ctx: *mut raw::RedisModuleCtx, touched: impl Fn(c_int) -> bool) {
    let queues: Vec<u64> = STATE.with(|s| {
        let s = s.borrow();
        let hit = s.queues.iter().filter(|(_, q)| touched(q.db));
        hit.map(|(&qid, _)| qid).collect()
    });
    for qid in queues {
        schedule(ctx, qid, 0);
    }
}

/// `FLUSHALL` (sync or `ASYNC`), `FLUSHDB`, `DEBUG RELOAD`: once the data is
/// gone, the flushed databases' queues are decided again (no per-key events
/// are published for a flush).
pub extern "C" fn on_flush(
    ctx: *mut raw::RedisModuleCtx,
    _event: raw::RedisModuleEvent,
    subevent: u64,
    data: *mut c_void,
) {
    if subevent != raw::REDISMODULE_SUBEVENT_FLUSHDB_END || data.is_null() || !active() {
        return;
    }
    // SAFETY: the server passes a `RedisModuleFlushInfo` with this event.
    let dbnum = unsafe { (*data.cast::<raw::RedisModuleFlushInfo>()).dbnum };
    let _ = catch_unwind(AssertUnwindSafe(|| {
        wake_databases(ctx, |db| dbnum == -1 || db == dbnum)
    }));
}

/// `SWAPDB a b`: the waiters of both databases are decided again on what
/// their keys now hold (as `BLPOP` is served after a swap).
pub extern "C" fn on_swapdb(
    ctx: *mut raw::RedisModuleCtx,
    _event: raw::RedisModuleEvent,
    _subevent: u64,
    data: *mut c_void,
) {
    if data.is_null() || !active() {
        return;
    }
    // SAFETY: the server passes a `RedisModuleSwapDbInfo` with this event.
    let info = unsafe { &*data.cast::<raw::RedisModuleSwapDbInfo>() };
    let (a, b) = (info.dbnum_first, info.dbnum_second);
    let _ = catch_unwind(AssertUnwindSafe(|| {
        wake_databases(ctx, |db| db == a || db == b)
    }));
}

/// The server is exiting: every handle is released (no reply reaches a client
/// after this; the connections close with the process).
pub extern "C" fn on_shutdown(
    ctx: *mut raw::RedisModuleCtx,
    _event: raw::RedisModuleEvent,
    _subevent: u64,
    _data: *mut c_void,
) {
    let _ = catch_unwind(AssertUnwindSafe(|| end_all(ctx, RlError::ShuttingDown)));
}

/// Ends every wait with `error`, nothing spent, and stops every timer.
fn end_all(ctx: *mut raw::RedisModuleCtx, error: RlError) {
    let queues = STATE.with(|s| {
        let mut s = s.borrow_mut();
        s.index.clear();
        s.by_client.clear();
        std::mem::take(&mut s.queues)
    });
    for (_, q) in queues {
        if let Some((id, _)) = q.timer {
            api!(RedisModule_StopTimer(ctx, id, std::ptr::null_mut()));
        }
        for w in q.waiters {
            finish(&w, Err(error.clone()), false);
        }
    }
}

/// The server became a replica (`REPLICAOF`, a cluster failover): every wait
/// ends with `-UNBLOCKED`, nothing spent. (Some servers end them themselves
/// first; those are gone from the queues by then.)
pub extern "C" fn on_role_change(
    ctx: *mut raw::RedisModuleCtx,
    _event: raw::RedisModuleEvent,
    subevent: u64,
    _data: *mut c_void,
) {
    if subevent != raw::REDISMODULE_EVENT_REPLROLECHANGED_NOW_REPLICA {
        return;
    }
    let _ = catch_unwind(AssertUnwindSafe(|| end_all(ctx, RlError::Unblocked)));
}
