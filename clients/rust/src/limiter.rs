//! [`Limiter`]: the commands over a redis-rs async connection, on the module or the Functions
//! library.
//!
//! A limiter starts on the module. A server that answers `unknown command` has no module: from
//! then on the limiter calls the library with `FCALL`, and where the library is missing
//! (`Function not found`: never loaded, `FUNCTION FLUSH`, a failover to a server without it)
//! it loads the copy shipped in this crate (`FUNCTION LOAD REPLACE`, on every primary of a
//! cluster) and calls again, once; where it cannot (the load refused, no Functions) that is an
//! [`Error::LibraryUnavailable`]. One load at a time: where a herd of calls finds the library
//! missing, the first loads it and the others wait for that load, then call again. A load that
//! fails starts a backoff (1 s, doubled after each failure in a row up to 30 s) during which a
//! call that finds the library missing returns the failed load's error.

use std::any::Any;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use redis::aio::ConnectionLike;
use redis::{RedisError, Value};

use crate::cache::DenialCache;
use crate::call::{Call, IntoLayer, Layer};
use crate::command::{self, Command, Options, Reply};
use crate::decision::{AllDecision, Backend, Decision, TopEntry};
use crate::error::{
    classify, function_missing, library_unavailable, unknown_command, Error, Result, NOT_LOADABLE,
    NOT_LOADED, NO_FUNCTIONS,
};
use crate::metrics::{self, Metrics};
use crate::policy::Policy;
use crate::reservation::Reservation;

/// The Functions library this crate loads where the module is absent: the repository's
/// functions/rl.lua, as this crate was built with it.
pub const LIBRARY: &str = include_str!(concat!(env!("OUT_DIR"), "/rl.lua"));

/// The backoff after a first failed load, and its most.
const FIRST_BACKOFF: Duration = Duration::from_secs(1);
const MAX_BACKOFF: Duration = Duration::from_secs(30);

/// The loads of the library: one at a time, and the backoff after failures.
#[derive(Default)]
struct Gate {
    lock: tokio::sync::Mutex<()>,
    state: Mutex<GateState>,
}

#[derive(Default)]
struct GateState {
    loaded_at: Option<Instant>,
    failures: u32,
    until: Option<Instant>,
    error: Option<Error>,
}

struct Inner<C> {
    conn: C,
    backend: AtomicU8,
    gate: Gate,
    cache: Option<Arc<DenialCache>>,
    metrics: Arc<Metrics>,
}

/// Rate limits over an async redis-rs connection `C`: a
/// [`MultiplexedConnection`](redis::aio::MultiplexedConnection), a
/// [`ConnectionManager`](redis::aio::ConnectionManager) or a cluster's
/// [`ClusterConnection`](redis::cluster_async::ClusterConnection) (any
/// [`ConnectionLike`] that is `Clone + Send + Sync + 'static`). Cheap to clone: the clones
/// share the connection, the backend found, the library's load, the denial cache and the
/// counters.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// # let url = std::env::var("RL_REDIS_URL").unwrap_or("redis://127.0.0.1:6379".into());
/// use redis_rl::{Limiter, Policy};
///
/// let client = redis::Client::open(url)?;
/// let limiter = Limiter::new(client.get_multiplexed_async_connection().await?);
/// let policy = Policy::gcra(10, "1s").burst(5).name("api");
/// let decision = limiter.decide("doc:limiter:user:42", &policy).await?;
/// assert!(decision.allowed);
/// assert_eq!(decision.remaining, 4);
/// # Ok(())
/// # }
/// ```
pub struct Limiter<C> {
    inner: Arc<Inner<C>>,
}

impl<C> Clone for Limiter<C> {
    fn clone(&self) -> Self {
        Limiter {
            inner: Arc::clone(&self.inner),
        }
    }
}

impl<C> std::fmt::Debug for Limiter<C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Limiter")
            .field("backend", &self.backend())
            .finish_non_exhaustive()
    }
}

impl<C> Limiter<C> {
    /// The backend found: None before the first call, then the module or the library.
    pub fn backend(&self) -> Option<Backend> {
        match self.inner.backend.load(Ordering::Relaxed) {
            MODULE => Some(Backend::Module),
            LIB => Some(Backend::Library),
            _ => None,
        }
    }
}

const UNKNOWN: u8 = 0;
const MODULE: u8 = 1;
const LIB: u8 = 2;

/// The Redis Cluster slot of `key` (CRC16 of its hash tag, the text in its first `{...}` when
/// not empty).
pub(crate) fn slot(key: &[u8]) -> u16 {
    let tagged = key.iter().position(|&b| b == b'{').and_then(|open| {
        let close = key[open + 1..].iter().position(|&b| b == b'}')?;
        (close > 0).then(|| &key[open + 1..open + 1 + close])
    });
    let mut crc: u16 = 0;
    for &b in tagged.unwrap_or(key) {
        crc ^= u16::from(b) << 8;
        for _ in 0..8 {
            crc = if crc & 0x8000 != 0 {
                (crc << 1) ^ 0x1021
            } else {
                crc << 1
            };
        }
    }
    crc % 16384
}

fn result_of(decision: &Decision) -> &'static str {
    if decision.cached {
        metrics::OVER_CACHED
    } else if !decision.allowed {
        metrics::OVER
    } else if decision.shadowed() {
        metrics::SHADOW
    } else {
        metrics::WITHIN
    }
}

/// How a call is counted in the limiter's counters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Count {
    /// Not at all (`PEEK`).
    Not,
    /// Once; an error the server could not decide is `unavailable`.
    Call,
    /// Once, as a request a middleware lets through where the server cannot decide
    /// (`fail_open`): such an error is `unavailable_fail_open`.
    FailOpen,
}

fn error_result(err: &Error, count: Count) -> &'static str {
    if !err.is_unavailable() {
        metrics::ERROR
    } else if count == Count::FailOpen {
        metrics::UNAVAILABLE_OPEN
    } else {
        metrics::UNAVAILABLE
    }
}

impl<C> Limiter<C>
where
    C: ConnectionLike + Clone + Send + Sync + 'static,
{
    /// A limiter over `conn`, with a denial cache of its own
    /// ([`DEFAULT_MAX_ENTRIES`](crate::cache::DEFAULT_MAX_ENTRIES) entries).
    pub fn new(conn: C) -> Limiter<C> {
        Limiter::with_cache(conn, Some(DenialCache::default()))
    }

    /// A limiter over `conn` with the denial cache given, or none.
    pub fn with_cache(conn: C, cache: Option<DenialCache>) -> Limiter<C> {
        let cache = cache.map(Arc::new);
        let metrics = Arc::new(Metrics::new(cache.clone()));
        Limiter {
            inner: Arc::new(Inner {
                conn,
                backend: AtomicU8::new(UNKNOWN),
                gate: Gate::default(),
                cache,
                metrics,
            }),
        }
    }

    /// The denial cache, if on.
    pub fn cache(&self) -> Option<&Arc<DenialCache>> {
        self.inner.cache.as_ref()
    }

    /// This limiter's counters (the tower layer counts its requests here too).
    pub fn metrics(&self) -> &Arc<Metrics> {
        &self.inner.metrics
    }

    /// The connection.
    pub fn connection(&self) -> &C {
        &self.inner.conn
    }

    /// `cmd` sent; on a cluster, to `key`'s node where `routed_by_us` (redis-rs would route
    /// it by the wrong argument).
    async fn send(
        &self,
        cmd: redis::Cmd,
        routed_by_us: bool,
        key: &str,
    ) -> std::result::Result<Value, RedisError> {
        let mut conn = self.inner.conn.clone();
        if routed_by_us {
            if let Some(cluster) = (&mut conn as &mut (dyn Any + Send))
                .downcast_mut::<redis::cluster_async::ClusterConnection>()
            {
                use redis::cluster_routing::{Route, RoutingInfo, SingleNodeRoutingInfo, SlotAddr};
                let route = Route::new(slot(key.as_bytes()), SlotAddr::Master);
                let routing = RoutingInfo::SingleNode(SingleNodeRoutingInfo::SpecificNode(route));
                return cluster.route_command(cmd, routing).await;
            }
        }
        cmd.query_async(&mut conn).await
    }

    /// `cmd` on the module, or on the library (loaded where missing).
    async fn run(&self, cmd: &Command) -> Result<Reply> {
        let key = cmd.node_key();
        if self.inner.backend.load(Ordering::Relaxed) != LIB {
            match self.send(cmd.module(), cmd.routed_by_us(), key).await {
                Ok(reply) => {
                    self.inner.backend.store(MODULE, Ordering::Relaxed);
                    return cmd.decode(reply, Backend::Module);
                }
                Err(e) if unknown_command(&e) => self.inner.backend.store(LIB, Ordering::Relaxed),
                Err(e) => {
                    if e.code().is_some() && !crate::error::unavailable(&e) {
                        self.inner.backend.store(MODULE, Ordering::Relaxed);
                    }
                    return Err(classify(e));
                }
            }
        }
        let sent = Instant::now();
        match self.send(cmd.library(), false, key).await {
            Ok(reply) => cmd.decode(reply, Backend::Library),
            Err(e) if unknown_command(&e) => Err(library_unavailable(e, NO_FUNCTIONS)),
            Err(e) if function_missing(&e) => {
                self.load_once(sent).await?;
                match self.send(cmd.library(), false, key).await {
                    Ok(reply) => cmd.decode(reply, Backend::Library),
                    Err(e) if function_missing(&e) => Err(library_unavailable(e, NOT_LOADED)),
                    Err(e) => Err(classify(e)),
                }
            }
            Err(e) => Err(classify(e)),
        }
    }

    /// The library loaded where a call sent at `sent` found it missing: by this call, or by
    /// the load in flight, waited for; the last failed load's error while backing off.
    async fn load_once(&self, sent: Instant) -> Result<()> {
        let gate = &self.inner.gate;
        let _one = gate.lock.lock().await;
        {
            let st = gate.state.lock().unwrap_or_else(|e| e.into_inner());
            if st.loaded_at.is_some_and(|at| at >= sent) {
                return Ok(());
            }
            if let (Some(err), Some(until)) = (&st.error, st.until) {
                if Instant::now() < until {
                    return Err(err.clone());
                }
            }
        }
        let loaded = self.function_load().await;
        let mut st = gate.state.lock().unwrap_or_else(|e| e.into_inner());
        match loaded {
            Ok(()) => {
                *st = GateState {
                    loaded_at: Some(Instant::now()),
                    ..GateState::default()
                };
                Ok(())
            }
            Err(err) => {
                st.failures += 1;
                let backoff = FIRST_BACKOFF
                    .saturating_mul(1 << (st.failures - 1).min(5))
                    .min(MAX_BACKOFF);
                st.until = Some(Instant::now() + backoff);
                st.error = Some(err.clone());
                Err(err)
            }
        }
    }

    async fn function_load(&self) -> Result<()> {
        let mut conn = self.inner.conn.clone();
        redis::cmd("FUNCTION")
            .arg("LOAD")
            .arg("REPLACE")
            .arg(LIBRARY)
            .query_async::<Value>(&mut conn)
            .await
            .map(|_| ())
            .map_err(|e| library_unavailable(e, NOT_LOADABLE))
    }

    /// `FUNCTION LOAD REPLACE` of this crate's library (on every primary of a cluster). Calls
    /// do it by themselves where the library is missing.
    pub async fn load_library(&self) -> Result<()> {
        self.function_load().await
    }

    async fn one(
        &self,
        cmd: Command,
        key: &str,
        policy: &Policy,
        cost: u64,
        count: Count,
        cached: bool,
    ) -> Result<Decision> {
        let counted = count != Count::Not;
        let cache = if cached {
            self.inner.cache.as_ref()
        } else {
            None
        };
        if let Some(hit) = cache.and_then(|c| c.get(key, policy, cost)) {
            if counted {
                self.inner
                    .metrics
                    .add(policy.label(), metrics::OVER_CACHED, 1);
            }
            return Ok(hit);
        }
        let sent = Instant::now();
        let got = self.run(&cmd).await.and_then(|r| match r {
            Reply::One(d) => Ok(d),
            _ => Err(Error::refused("unexpected reply")),
        });
        match &got {
            Ok(d) => {
                if let Some(c) = cache {
                    c.put(key, policy, cost, d, sent, counted);
                }
                if counted {
                    self.inner.metrics.add(policy.label(), result_of(d), 1);
                }
            }
            Err(e) if counted => self
                .inner
                .metrics
                .add(policy.label(), error_result(e, count), 1),
            Err(_) => {}
        }
        got
    }

    /// `RL.<ALGO> key params` (or `RL.LIMIT key name` for [`Policy::named`]): one request of
    /// cost 1. Through the denial cache: a cached denial of (key, policy) answers without a
    /// call, and the server's denial is cached. Counted in [`metrics`](Limiter::metrics).
    pub async fn decide(&self, key: &str, policy: &Policy) -> Result<Decision> {
        self.decide_with(key, policy, Call::new()).await
    }

    /// [`decide`](Limiter::decide) under the name other rate-limit crates give it.
    pub async fn check(&self, key: &str, policy: &Policy) -> Result<Decision> {
        self.decide(key, policy).await
    }

    /// [`decide`](Limiter::decide) of a request of `cost` (`COST n`).
    pub async fn decide_cost(&self, key: &str, policy: &Policy, cost: u64) -> Result<Decision> {
        self.decide_with(key, policy, Call::new().cost(cost)).await
    }

    /// [`decide`](Limiter::decide) with a [`Call`]'s options. A `PEEK` call is not counted; a
    /// `BLOCK` call neither reads nor writes the denial cache.
    pub async fn decide_with(&self, key: &str, policy: &Policy, call: Call) -> Result<Decision> {
        let options = Options {
            cost: call.cost,
            peek: call.peek,
            block_ms: call.block_ms,
            ..Options::default()
        };
        let cmd = command::decide(key, policy, options)?;
        self.one(
            cmd,
            key,
            policy,
            call.cost,
            if call.peek { Count::Not } else { Count::Call },
            call.block_ms.is_none(),
        )
        .await
    }

    /// `RL.PEEK ALGO key params [COST n]` (`RL.PEEK POLICY key name`): what the call would
    /// decide, writing nothing (read-only: it runs on replicas and for read-only ACL users). A
    /// cached denial answers it, and its denial is cached; it is not counted. A policy's
    /// penalty is not sent (the command takes none).
    pub async fn peek(&self, key: &str, policy: &Policy, cost: u64) -> Result<Decision> {
        let cmd = command::peek(key, policy, cost)?;
        self.one(cmd, key, policy, cost, Count::Not, true).await
    }

    async fn all_layers<L: IntoLayer>(
        &self,
        layers: &[L],
        peek: bool,
        count: Count,
    ) -> Result<AllDecision> {
        let given: Vec<(String, Policy, u64)> = layers
            .iter()
            .map(|l| {
                let l = l.to_layer();
                (l.key, l.policy, l.cost.unwrap_or(1))
            })
            .collect();
        let cmd = command::all_of(&given, peek)?;
        let cache = self.inner.cache.as_ref();
        let counted = count != Count::Not;
        let joined = || {
            given
                .iter()
                .map(|(_, p, _)| p.label())
                .collect::<Vec<_>>()
                .join("+")
        };
        if let (Some(c), false) = (cache, peek) {
            let hits: Vec<Option<Decision>> =
                given.iter().map(|(k, p, n)| c.get(k, p, *n)).collect();
            let binding = hits
                .iter()
                .enumerate()
                .filter_map(|(i, d)| d.as_ref().map(|d| (i, d.retry_after_ms)))
                .max_by_key(|&(i, retry)| (retry, std::cmp::Reverse(i)));
            if let Some((index, _)) = binding {
                let decision = AllDecision {
                    binding: hits[index].clone().expect("hit"),
                    layers: hits,
                    index,
                };
                self.inner
                    .metrics
                    .add(given[index].1.label(), metrics::OVER_CACHED, 1);
                return Ok(decision);
            }
        }
        let sent = Instant::now();
        let got = self.run(&cmd).await.and_then(|r| match r {
            Reply::All(d) => Ok(d),
            _ => Err(Error::refused("unexpected reply")),
        });
        match &got {
            Ok(result) => {
                if let Some(c) = cache {
                    for ((k, p, n), d) in given.iter().zip(&result.layers) {
                        if let Some(d) = d {
                            c.put(k, p, *n, d, sent, counted && result.allowed());
                        }
                    }
                }
                if counted {
                    let at = if result.allowed() {
                        result.shadowed().first().copied().unwrap_or(result.index)
                    } else {
                        result.index
                    };
                    let r = if !result.allowed() {
                        metrics::OVER
                    } else if !result.shadowed().is_empty() {
                        metrics::SHADOW
                    } else {
                        metrics::WITHIN
                    };
                    self.inner.metrics.add(given[at].1.label(), r, 1);
                }
            }
            Err(e) if counted => self.inner.metrics.add(&joined(), error_result(e, count), 1),
            Err(_) => {}
        }
        got
    }

    /// `RL.ALL`: every layer admits, and is spent, or none is (all keys in one slot on a
    /// cluster: use a hash tag). Through the denial cache: a layer cached denied denies the
    /// call without one (its other layers are then None), and each denied layer of the reply
    /// is cached. Counted under the binding layer's policy name.
    pub async fn decide_all<L: IntoLayer>(&self, layers: &[L]) -> Result<AllDecision> {
        self.all_layers(layers, false, Count::Call).await
    }

    /// `RL.ALL ... PEEK`: every layer's state, writing nothing; sent whatever the cache holds;
    /// not counted.
    pub async fn peek_all<L: IntoLayer>(&self, layers: &[L]) -> Result<AllDecision> {
        self.all_layers(layers, true, Count::Not).await
    }

    /// A request of the tower layer: [`decide`](Limiter::decide) of its one layer, counted
    /// the same, except that where the server cannot decide and `fail_open` lets the request
    /// through it is counted `unavailable_fail_open` (as the Python and Node middlewares
    /// count it).
    #[cfg(feature = "tower")]
    pub(crate) async fn decide_request(
        &self,
        key: &str,
        policy: &Policy,
        fail_open: bool,
    ) -> Result<Decision> {
        let options = Options {
            cost: 1,
            ..Options::default()
        };
        let cmd = command::decide(key, policy, options)?;
        let count = if fail_open {
            Count::FailOpen
        } else {
            Count::Call
        };
        self.one(cmd, key, policy, 1, count, true).await
    }

    /// A request of the tower layer: [`decide_all`](Limiter::decide_all) of its layers,
    /// counted the same but for `unavailable_fail_open`, as
    /// [`decide_request`](Limiter::decide_request).
    #[cfg(feature = "tower")]
    pub(crate) async fn decide_all_request(
        &self,
        layers: &[Layer],
        fail_open: bool,
    ) -> Result<AllDecision> {
        let count = if fail_open {
            Count::FailOpen
        } else {
            Count::Call
        };
        self.all_layers(layers, false, count).await
    }

    pub(crate) async fn run_one(&self, cmd: &Command) -> Result<Decision> {
        match self.run(cmd).await? {
            Reply::One(d) => Ok(d),
            _ => Err(Error::refused("unexpected reply")),
        }
    }

    pub(crate) async fn run_all(&self, cmd: &Command) -> Result<AllDecision> {
        match self.run(cmd).await? {
            Reply::All(d) => Ok(d),
            _ => Err(Error::refused("unexpected reply")),
        }
    }

    /// `RL.<ALGO> key params REFUND n` (`RL.LIMIT key name REFUND n`): give `n` units back
    /// (always admitted). Drops (key, policy) from the denial cache.
    pub async fn refund(&self, key: &str, policy: &Policy, n: u64) -> Result<Decision> {
        let cmd = command::decide(
            key,
            policy,
            Options {
                cost: 1,
                refund: Some(n),
                ..Options::default()
            },
        )?;
        if let Some(c) = &self.inner.cache {
            c.drop_key(key, Some(policy));
        }
        self.run_one(&cmd).await
    }

    /// `RL.<ALGO> key params DEBIT n`: charge `n` units (1 to 10^12) after the fact, whatever
    /// is left: never denied. The key may go into debt (`remaining` 0, `retry_after_ms` until
    /// a request of cost 1 is admitted), and stays in it until it has refilled past it.
    pub async fn debit(&self, key: &str, policy: &Policy, n: u64) -> Result<Decision> {
        let cmd = command::decide(
            key,
            policy,
            Options {
                cost: 1,
                debit: Some(n),
                ..Options::default()
            },
        )?;
        self.run_one(&cmd).await
    }

    /// `RL.BAN key ms`: `key` denied for `ms` milliseconds from now whatever its limiter and
    /// its rate, replacing any penalty; `ms = 0` lifts a ban or a penalty. True if the key
    /// existed. Drops the key's entries from the denial cache.
    pub async fn ban(&self, key: &str, ms: u64) -> Result<bool> {
        if let Some(c) = &self.inner.cache {
            c.drop_key(key, None);
        }
        match self.run(&command::ban(key, ms)).await? {
            Reply::Bool(b) => Ok(b),
            _ => Err(Error::refused("unexpected reply")),
        }
    }

    /// `RL.ACQUIRE key limit timeout lease_id`: take (or renew) one of `limit` leases.
    pub async fn acquire(
        &self,
        key: &str,
        limit: u64,
        timeout: impl Into<crate::Dur>,
        lease_id: &str,
    ) -> Result<Decision> {
        let timeout = timeout.into();
        let text = timeout.arg().map_err(Error::refused)?;
        self.run_one(&command::acquire(key, limit, text, lease_id, false))
            .await
    }

    /// `RL.RELEASE key lease_id`: true if the lease was held.
    pub async fn release(&self, key: &str, lease_id: &str) -> Result<bool> {
        match self.run(&command::release(key, lease_id)).await? {
            Reply::Bool(b) => Ok(b),
            _ => Err(Error::refused("unexpected reply")),
        }
    }

    /// `RL.POLICY SET name definition`: `policy` defined on the server under `name` (with
    /// `SHADOW` when [`Policy::shadow`] marked it), to be called as [`Policy::named`]. The
    /// module's only (the library's policies are a generated block of the library); on a
    /// cluster, define it on each node.
    pub async fn define(&self, name: &str, policy: &Policy) -> Result<()> {
        policy.check()?;
        Policy::named(name).check()?;
        let definition = policy
            .definition()
            .ok_or_else(|| Error::refused("a server-side policy is defined already"))?;
        let mut cmd = redis::cmd("RL.POLICY");
        cmd.arg("SET").arg(name);
        for word in definition.split(' ') {
            cmd.arg(word);
        }
        self.send(cmd, true, name)
            .await
            .map(|_| ())
            .map_err(classify)
    }

    /// `RL.TOP policy COUNT n`: the keys the server-side policy `name` denied most on the node
    /// asked, heaviest first. The module's only; on a cluster, ask each node.
    pub async fn top(&self, name: &str, count: u64) -> Result<Vec<TopEntry>> {
        self.top_args(vec![
            "RL.TOP".into(),
            name.into(),
            "COUNT".into(),
            count.to_string(),
        ])
        .await
    }

    /// `RL.TOP COMMAND command COUNT n` (`command` as `rl.gcra`): the keys the command's
    /// spelled-out calls denied most.
    pub async fn top_command(&self, command: &str, count: u64) -> Result<Vec<TopEntry>> {
        self.top_args(vec![
            "RL.TOP".into(),
            "COMMAND".into(),
            command.into(),
            "COUNT".into(),
            count.to_string(),
        ])
        .await
    }

    async fn top_args(&self, args: Vec<String>) -> Result<Vec<TopEntry>> {
        let mut cmd = redis::cmd(&args[0]);
        for a in &args[1..] {
            cmd.arg(a);
        }
        let mut conn = self.inner.conn.clone();
        let reply: Value = cmd.query_async(&mut conn).await.map_err(classify)?;
        let mut out = Vec::new();
        for entry in command::array(&reply)? {
            let parts = command::array(entry)?;
            let key = match parts.first() {
                Some(Value::BulkString(b)) => String::from_utf8_lossy(b).into_owned(),
                Some(Value::SimpleString(s)) => s.clone(),
                _ => String::new(),
            };
            let n = parts.get(1).map(command::integer).transpose()?.unwrap_or(0);
            let over = parts.get(2).map(command::integer).transpose()?.unwrap_or(0);
            out.push(TopEntry {
                key,
                denials: n,
                overestimate: over,
            });
        }
        Ok(out)
    }

    /// `(decision, reservation)`: the request decided at `COST estimate`, and when admitted a
    /// [`Reservation`] to [`settle`](Reservation::settle) once its actual cost is known (None
    /// when denied). Settling sends `DEBIT` or `REFUND` of the difference. A `SHADOW` policy's
    /// denial, admitted, reserved nothing: its reservation has no layers.
    pub async fn reserve(
        &self,
        key: &str,
        policy: &Policy,
        estimate: u64,
    ) -> Result<(Decision, Option<Reservation<C>>)> {
        let cmd = command::decide(
            key,
            policy,
            Options {
                cost: estimate,
                ..Options::default()
            },
        )?;
        let sent_at = Instant::now();
        let decision = self.run_one(&cmd).await?;
        if !decision.allowed {
            return Ok((decision, None));
        }
        let mut per = vec![decision];
        let layers = vec![(key.to_string(), policy.clone())];
        self.read_shadows(&mut per, &layers, &[0]).await?;
        let decision = per.pop().expect("one");
        let held = if decision.shadowed() {
            vec![]
        } else {
            vec![(layers[0].clone(), decision.reset_after_ms)]
        };
        Ok((
            decision,
            Some(Reservation::new(
                self.clone(),
                held,
                estimate,
                false,
                sent_at,
            )),
        ))
    }

    /// `(all_decision, reservation)` from one `RL.ALL`: each layer without a cost of its own
    /// spends `COST estimate` and is settled by the reservation; each layer with one spends it
    /// and is never settled (a request count next to a token budget), nor is a layer a
    /// `SHADOW` policy denied. The reservation is None when denied.
    pub async fn reserve_all<L: IntoLayer>(
        &self,
        layers: &[L],
        estimate: u64,
    ) -> Result<(AllDecision, Option<Reservation<C>>)> {
        let given: Vec<Layer> = layers.iter().map(IntoLayer::to_layer).collect();
        let spent: Vec<usize> = given
            .iter()
            .enumerate()
            .filter(|(_, l)| l.cost.is_none())
            .map(|(i, _)| i)
            .collect();
        let with_costs: Vec<(String, Policy, u64)> = given
            .iter()
            .map(|l| (l.key.clone(), l.policy.clone(), l.cost.unwrap_or(estimate)))
            .collect();
        let cmd = command::all_of(&with_costs, false)?;
        let sent_at = Instant::now();
        let decision = self.run_all(&cmd).await?;
        if !decision.allowed() {
            return Ok((decision, None));
        }
        let pairs: Vec<(String, Policy)> = given
            .iter()
            .map(|l| (l.key.clone(), l.policy.clone()))
            .collect();
        let mut per: Vec<Decision> = decision
            .layers
            .iter()
            .map(|d| d.clone().expect("every layer"))
            .collect();
        self.read_shadows(&mut per, &pairs, &spent).await?;
        let held = spent
            .iter()
            .filter(|&&i| !per[i].shadowed())
            .map(|&i| (pairs[i].clone(), per[i].reset_after_ms))
            .collect();
        let index = decision.index;
        let decision = AllDecision {
            binding: per[index].clone(),
            layers: per.into_iter().map(Some).collect(),
            index,
        };
        Ok((
            decision,
            Some(Reservation::new(
                self.clone(),
                held,
                estimate,
                true,
                sent_at,
            )),
        ))
    }

    /// Where a spent layer's reply reads as a `SHADOW` policy's denial, its definition
    /// decides: an enforced `LEAKY` policy's reply is an admission (its queue's delay); any
    /// other policy's is a shadowed denial.
    async fn read_shadows(
        &self,
        per: &mut [Decision],
        layers: &[(String, Policy)],
        spent: &[usize],
    ) -> Result<()> {
        let mut definitions: Vec<(String, Option<String>)> = Vec::new();
        for &i in spent {
            if !per[i].looks_shadowed() {
                continue;
            }
            let name = per[i].policy_name().to_string();
            let line = match definitions.iter().find(|(n, _)| *n == name) {
                Some((_, line)) => line.clone(),
                None => {
                    let line = match self
                        .run(&command::policy_definition(&layers[i].0, &name))
                        .await?
                    {
                        Reply::Line(l) => l,
                        _ => None,
                    };
                    definitions.push((name, line.clone()));
                    line
                }
            };
            per[i].known_shadowed = Some(!enforced_leaky(line.as_deref()));
        }
        Ok(())
    }
}

/// A policy's line (`name LEAKY capacity leak period [SHADOW]`) is an enforced LEAKY policy's.
fn enforced_leaky(line: Option<&str>) -> bool {
    let words: Vec<String> = line
        .unwrap_or("")
        .split_whitespace()
        .map(str::to_ascii_uppercase)
        .collect();
    words.len() > 1 && words[1] == "LEAKY" && !words[2..].iter().any(|w| w == "SHADOW")
}

#[cfg(test)]
mod tests {
    use super::slot;

    #[test]
    fn slots() {
        assert_eq!(slot(b"foo"), 12182);
        assert_eq!(slot(b"{user1000}.following"), slot(b"user1000"));
        assert_eq!(slot(b"foo{}{bar}"), slot(b"foo{}{bar}"));
        assert_eq!(slot(b"123456789"), 0x31C3);
    }
}
