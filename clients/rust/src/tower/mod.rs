//! A [`tower::Layer`](::tower::Layer) for axum (and any tower service over `http` requests):
//! the layers of a request (per client address, per API key, per endpoint, ...) decided
//! together by **one** `RL.ALL`, all or nothing, as the Python package's ASGI middleware and the
//! Node package's Express middleware do (a request only one layer applies to, by that layer's
//! own command).
//!
//! - A denial is answered by the layer itself: `429`, the binding layer's headers
//!   ([`Decision::all_headers`]: `X-RateLimit-*`, `RateLimit-Policy`, `RateLimit`, and
//!   `Retry-After` unless the request can never be admitted) and the JSON body
//!   `{"error": "rate limited", "layer": "<name>"}`. Nothing is spent unless every layer admits.
//! - An admitted request goes on, and its response carries the same headers less `Retry-After`.
//!   Behind another of these layers (a second one, tagged by another layer on a cluster) the
//!   response keeps whichever decision has fewer remaining, the inner one's on a tie.
//! - When the server cannot decide ([`Error::is_unavailable`]: out of reach, `LOADING`, `BUSY`,
//!   `MASTERDOWN`, `CLUSTERDOWN`, `TRYAGAIN`, `OOM`, `READONLY`) the request is answered `503`
//!   `{"error": "rate limiter unavailable"}` (fail closed), or with
//!   [`fail_open`](crate::tower::RateLimitBuilder::fail_open) let through. Any other error (a
//!   policy the server refuses, a foreign key, the library that cannot be loaded, `NOPERM`) is a
//!   `500` `{"error": "rate limiter error"}` whatever `fail_open` says: never let through
//!   unchecked, never a panic. So is a request without a client address where a layer keys by
//!   it (serve the app with `into_make_service_with_connect_info::<SocketAddr>()`).
//! - The binding layer's [`Decision`] is in the extensions of the request the inner service
//!   gets (a handler reads it with `Extension<Decision>`) and of the response, a 429's too.
//! - The limiter's denial cache answers a request one of whose layers is cached denied with the
//!   same 429, without a call; its counters count each request once
//!   ([`RateLimitLayer::metrics`](crate::tower::RateLimitLayer::metrics),
//!   [`metrics_handler`](crate::tower::metrics_handler)): a request the server could not
//!   decide as `unavailable` when answered 503, `unavailable_fail_open` when let through.
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! # let url = std::env::var("RL_REDIS_URL").unwrap_or("redis://127.0.0.1:6379".into());
//! use std::net::SocketAddr;
//!
//! use axum::{body::Body, extract::ConnectInfo, http::Request, routing::get, Router};
//! use redis_rl::tower::{Identify, RateLimitLayer, TrustedProxies};
//! use redis_rl::{Limiter, Policy};
//! use tower::ServiceExt;
//!
//! let client = redis::Client::open(url)?;
//! let limiter = Limiter::new(client.get_multiplexed_async_connection().await?);
//! let layer = RateLimitLayer::builder(limiter)
//!     .prefix("doc:tower")
//!     .layer("ip", Identify::client_ip(TrustedProxies::none()), Policy::gcra(100, "1s").burst(20))
//!     .layer("key", Identify::header("x-api-key")?, Policy::sliding(1000, "1h"))
//!     .build()?;
//! let app = Router::new().route("/", get(|| async { "ok" })).layer(layer);
//!
//! // Served by `axum::serve(listener, app.into_make_service_with_connect_info::<SocketAddr>())`;
//! // here one request, with the peer address axum gives it.
//! let peer = SocketAddr::from(([203, 0, 113, 7], 4711));
//! let request = Request::get("/")
//!     .header("x-api-key", "k1")
//!     .extension(ConnectInfo(peer))
//!     .body(Body::empty())?;
//! let response = app.oneshot(request).await?;
//! assert_eq!(response.status(), 200);
//! // Both layers spent one; the address's 19 left bind (the key has 999).
//! assert_eq!(response.headers()["x-ratelimit-remaining"], "19");
//! assert_eq!(response.headers()["ratelimit-policy"], "\"ip\";q=100;w=1");
//! # Ok(())
//! # }
//! ```

mod key;

use std::borrow::Cow;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use axum::body::{Body, Bytes, HttpBody};
use http::header::{HeaderName, HeaderValue, CONTENT_LENGTH, CONTENT_TYPE};
use http::request::Parts;
use http::{Request, Response, StatusCode};
use redis::aio::ConnectionLike;

pub use key::{forwarded_client, ip_key, Identify, TrustedProxies};

use crate::call::Layer;
use crate::decision::{AllDecision, Decision};
use crate::error::Error;
use crate::limiter::Limiter;
use crate::metrics::Metrics;
use crate::policy::Policy;

type PolicyFn = dyn Fn(&Parts) -> Option<Policy> + Send + Sync;

/// A layer's policy: the same for every request, or a function of the request's head (the
/// caller's plan, the route); `None` skips the layer for that request.
#[derive(Clone)]
enum PolicyFor {
    Fixed(Policy),
    Func(Arc<PolicyFn>),
}

#[derive(Clone)]
struct Spec {
    name: String,
    identify: Identify,
    policy: PolicyFor,
}

struct Config<C> {
    limiter: Limiter<C>,
    layers: Vec<Spec>,
    prefix: String,
    tag: Option<usize>,
    fail_open: bool,
}

/// Builds a [`RateLimitLayer`]: its layers, key prefix, hash tag and `fail_open`.
pub struct RateLimitBuilder<C> {
    limiter: Limiter<C>,
    layers: Vec<Spec>,
    prefix: String,
    tag: Option<String>,
    fail_open: bool,
    invalid: Vec<String>,
}

impl<C> RateLimitBuilder<C> {
    /// A layer named `name` (in keys, headers, the denial's body and the counters): requests
    /// identified by `identify`, limited by `policy`. An inline policy without a name of its
    /// own is named after the layer.
    pub fn layer(mut self, name: &str, identify: Identify, policy: Policy) -> Self {
        if let Err(e) = policy.check() {
            self.invalid.push(format!("layer {name:?}: {e}"));
        }
        self.layers.push(Spec {
            name: name.to_string(),
            identify,
            policy: PolicyFor::Fixed(named_after(policy, name)),
        });
        self
    }

    /// A layer whose policy is a function of the request's head (`None`: the layer does not
    /// apply to the request), e.g. the policy of the caller's plan, or of the route.
    pub fn layer_with<F>(mut self, name: &str, identify: Identify, policy: F) -> Self
    where
        F: Fn(&Parts) -> Option<Policy> + Send + Sync + 'static,
    {
        self.layers.push(Spec {
            name: name.to_string(),
            identify,
            policy: PolicyFor::Func(Arc::new(policy)),
        });
        self
    }

    /// Starts every key (default `rl`): `<prefix>:<layer>:<identity>`.
    pub fn prefix(mut self, prefix: &str) -> Self {
        self.prefix = prefix.to_string();
        self
    }

    /// For Redis Cluster: the name of the layer whose identity, escaped (`%` as `%25`, `{` as
    /// `%7B`, `}` as `%7D`; `%none` without one), is the hash tag of every key of a request:
    /// `<prefix>:{<tag>}:<layer>:<identity>`, so that `RL.ALL` can take them. Tag the layer
    /// the client cannot choose (its address): that layer counts every request of the address,
    /// and every other layer counts per address.
    pub fn tag(mut self, layer: &str) -> Self {
        self.tag = Some(layer.to_string());
        self
    }

    /// Let a request through when the server cannot decide (default: `503`); counted
    /// `unavailable_fail_open`.
    pub fn fail_open(mut self, fail_open: bool) -> Self {
        self.fail_open = fail_open;
        self
    }

    /// The layer; a configuration it refuses is an [`Error::Configuration`]: no layers, two
    /// layers of one name, a tag that names none of them, a brace in the prefix with a tag, a
    /// policy refused.
    pub fn build(self) -> Result<RateLimitLayer<C>, Error> {
        if let Some(e) = self.invalid.into_iter().next() {
            return Err(Error::refused(e));
        }
        if self.layers.is_empty() {
            return Err(Error::refused("RateLimitLayer needs at least one layer"));
        }
        let names: Vec<&str> = self.layers.iter().map(|l| l.name.as_str()).collect();
        for (i, n) in names.iter().enumerate() {
            if names[..i].contains(n) {
                return Err(Error::refused(format!(
                    "layer names must be distinct: {names:?}"
                )));
            }
        }
        let tag = match &self.tag {
            None => None,
            Some(t) => {
                let at = names.iter().position(|n| n == t).ok_or_else(|| {
                    Error::refused(format!(
                        "tag names a layer, one of {names:?}: {t:?} is none of them"
                    ))
                })?;
                if self.prefix.contains(['{', '}']) {
                    return Err(Error::refused(format!(
                        "with a tag, the prefix holds no brace (the tag is the keys' hash tag): {:?}",
                        self.prefix
                    )));
                }
                Some(at)
            }
        };
        Ok(RateLimitLayer {
            config: Arc::new(Config {
                limiter: self.limiter,
                layers: self.layers,
                prefix: self.prefix,
                tag,
                fail_open: self.fail_open,
            }),
        })
    }
}

fn named_after(policy: Policy, layer: &str) -> Policy {
    if policy.is_named() || !policy.policy_name().is_empty() {
        policy
    } else {
        policy.name(layer)
    }
}

/// The hash tag of a request whose tagged layer's identity is `identity` (the Python and Node
/// packages' `_tag_text` / `escapeTag`).
fn tag_text(identity: Option<&str>) -> String {
    match identity {
        None | Some("") => "%none".to_string(),
        Some(t) => t
            .replace('%', "%25")
            .replace('{', "%7B")
            .replace('}', "%7D"),
    }
}

/// The tower layer: wrap a service (`Router::layer`, `Router::route_layer`,
/// `ServiceBuilder::layer`) in [`RateLimit`]. Cheap to clone: clones share the limiter (its
/// connection, denial cache and counters) and the configuration.
pub struct RateLimitLayer<C> {
    config: Arc<Config<C>>,
}

impl<C> Clone for RateLimitLayer<C> {
    fn clone(&self) -> Self {
        Self {
            config: Arc::clone(&self.config),
        }
    }
}

impl<C> fmt::Debug for RateLimitLayer<C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<&str> = self.config.layers.iter().map(|l| l.name.as_str()).collect();
        f.debug_struct("RateLimitLayer")
            .field("layers", &names)
            .field("prefix", &self.config.prefix)
            .field("fail_open", &self.config.fail_open)
            .finish_non_exhaustive()
    }
}

impl<C> RateLimitLayer<C>
where
    C: ConnectionLike + Clone + Send + Sync + 'static,
{
    /// A builder over `limiter` (whose denial cache and counters the layer uses).
    pub fn builder(limiter: Limiter<C>) -> RateLimitBuilder<C> {
        RateLimitBuilder {
            limiter,
            layers: Vec::new(),
            prefix: "rl".to_string(),
            tag: None,
            fail_open: false,
            invalid: Vec::new(),
        }
    }

    /// The counters: each request decided counted once, under the layer that decided it
    /// ([`Metrics::snapshot`], [`Metrics::prometheus`]); the limiter's own.
    pub fn metrics(&self) -> Arc<Metrics> {
        Arc::clone(self.config.limiter.metrics())
    }

    /// The limiter.
    pub fn limiter(&self) -> &Limiter<C> {
        &self.config.limiter
    }
}

impl<S, C> ::tower::Layer<S> for RateLimitLayer<C> {
    type Service = RateLimit<S, C>;

    fn layer(&self, inner: S) -> Self::Service {
        RateLimit {
            inner,
            config: Arc::clone(&self.config),
        }
    }
}

/// The service [`RateLimitLayer`] makes: decides, then calls the inner service or answers.
pub struct RateLimit<S, C> {
    inner: S,
    config: Arc<Config<C>>,
}

impl<S: Clone, C> Clone for RateLimit<S, C> {
    fn clone(&self) -> Self {
        Self {
            inner: self.inner.clone(),
            config: Arc::clone(&self.config),
        }
    }
}

impl<S: fmt::Debug, C> fmt::Debug for RateLimit<S, C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RateLimit")
            .field("inner", &self.inner)
            .finish_non_exhaustive()
    }
}

/// One applying layer of a request: its name, key and policy.
struct Applying<'a> {
    name: &'a str,
    key: String,
    policy: Cow<'a, Policy>,
}

impl<C> Config<C> {
    /// The layers that apply to a request; Err when an address layer finds no address.
    fn applying(&self, parts: &Parts) -> Result<Vec<Applying<'_>>, ()> {
        let mut identities = Vec::with_capacity(self.layers.len());
        for l in &self.layers {
            identities.push(l.identify.identify(parts).map_err(|_| ())?);
        }
        let base: Cow<'_, str> = match self.tag {
            Some(at) => Cow::Owned(format!(
                "{}:{{{}}}",
                self.prefix,
                tag_text(identities[at].as_deref())
            )),
            None => Cow::Borrowed(&self.prefix),
        };
        let mut out = Vec::with_capacity(self.layers.len());
        for (l, identity) in self.layers.iter().zip(identities) {
            let Some(identity) = identity else { continue };
            let policy = match &l.policy {
                PolicyFor::Fixed(p) => Some(Cow::Borrowed(p)),
                PolicyFor::Func(f) => f(parts).map(|p| Cow::Owned(named_after(p, &l.name))),
            };
            if let Some(policy) = policy {
                let mut key = String::with_capacity(base.len() + l.name.len() + identity.len() + 2);
                for part in [&*base, ":", &l.name, ":", &identity] {
                    key.push_str(part);
                }
                out.push(Applying {
                    key,
                    name: &l.name,
                    policy,
                });
            }
        }
        Ok(out)
    }
}

type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send>>;

impl<S, C, B, ResBody> ::tower::Service<Request<B>> for RateLimit<S, C>
where
    S: ::tower::Service<Request<B>, Response = Response<ResBody>> + Clone + Send + 'static,
    S::Future: Send + 'static,
    S::Error: Send + 'static,
    B: Send + 'static,
    ResBody: HttpBody<Data = Bytes> + Send + 'static,
    ResBody::Error: Into<axum::BoxError>,
    C: ConnectionLike + Clone + Send + Sync + 'static,
{
    type Response = Response<Body>;
    type Error = S::Error;
    type Future = BoxFuture<Result<Response<Body>, S::Error>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: Request<B>) -> Self::Future {
        // The clone that was made ready serves this request; the clone is left for the next.
        let clone = self.inner.clone();
        let mut inner = std::mem::replace(&mut self.inner, clone);
        let config = Arc::clone(&self.config);
        Box::pin(async move {
            let (parts, body) = req.into_parts();
            let applying = match config.applying(&parts) {
                Ok(a) => a,
                Err(()) => {
                    return Ok(error_response(
                        StatusCode::INTERNAL_SERVER_ERROR,
                        ERROR_BODY,
                    ))
                }
            };
            let req = Request::from_parts(parts, body);
            if applying.is_empty() {
                return inner.call(req).await.map(|r| r.map(Body::new));
            }
            // One layer applying is decided by its own command (`RL.GCRA`, ...), whose reply
            // is half of a one-layer `RL.ALL`'s, as resty.rl does; several by one `RL.ALL`.
            // Counted by the limiter, once; a request `fail_open` lets through where the
            // server cannot decide as `unavailable_fail_open`.
            let decided = match &applying[..] {
                [one] => config
                    .limiter
                    .decide_request(&one.key, &one.policy, config.fail_open)
                    .await
                    .map(|d| (d, 0)),
                _ => {
                    let layers: Vec<Layer> = applying
                        .iter()
                        .map(|a| Layer::new(a.key.clone(), &a.policy))
                        .collect();
                    config
                        .limiter
                        .decide_all_request(&layers, config.fail_open)
                        .await
                        .map(|r: AllDecision| (r.binding, r.index))
                }
            };
            let (decision, index) = match decided {
                Ok(r) => r,
                Err(e) if e.is_unavailable() => {
                    if config.fail_open {
                        return inner.call(req).await.map(|r| r.map(Body::new));
                    }
                    return Ok(error_response(
                        StatusCode::SERVICE_UNAVAILABLE,
                        UNAVAILABLE_BODY,
                    ));
                }
                Err(_) => {
                    return Ok(error_response(
                        StatusCode::INTERNAL_SERVER_ERROR,
                        ERROR_BODY,
                    ));
                }
            };
            if !decision.allowed {
                let mut r = too_many(&decision, applying[index].name);
                r.extensions_mut().insert(decision);
                return Ok(r);
            }
            let mut req = req;
            req.extensions_mut().insert(decision.clone());
            let mut response = with_headers(inner.call(req).await?.map(Body::new), &decision);
            response.extensions_mut().insert(decision);
            Ok(response)
        })
    }
}

/// The body of a request the server could not decide (the Python middleware's).
const UNAVAILABLE_BODY: &str = r#"{"error": "rate limiter unavailable"}"#;
/// The body of any other error.
const ERROR_BODY: &str = r#"{"error": "rate limiter error"}"#;

fn json_response(status: StatusCode, body: String) -> Response<Body> {
    let len = body.len();
    let mut r = Response::new(Body::from(body));
    *r.status_mut() = status;
    r.headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    r.headers_mut()
        .insert(CONTENT_LENGTH, HeaderValue::from(len));
    r
}

fn error_response(status: StatusCode, body: &str) -> Response<Body> {
    json_response(status, body.to_string())
}

/// The name a denial gives its layer: its inline policy's name (the layer's unless the policy
/// has its own), or for a policy named on the server, the layer's.
fn label<'a>(decision: &'a Decision, layer: &'a str) -> &'a str {
    match &decision.policy {
        Some(p) if !p.is_named() && !p.policy_name().is_empty() => p.policy_name(),
        _ => layer,
    }
}

/// `s` as a JSON string as Python's `json.dumps` writes it (`ensure_ascii`).
fn json_string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            c if (c as u32) < 0x20 || (c as u32) > 0x7f => {
                let mut units = [0u16; 2];
                for u in c.encode_utf16(&mut units) {
                    out.push_str(&format!("\\u{u:04x}"));
                }
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// The 429 of a denial: the decision's headers and `{"error": "rate limited", "layer": ...}`.
fn too_many(decision: &Decision, layer: &str) -> Response<Body> {
    let body = format!(
        r#"{{"error": "rate limited", "layer": {}}}"#,
        json_string(label(decision, layer))
    );
    let mut r = json_response(StatusCode::TOO_MANY_REQUESTS, body);
    for (k, v) in decision.all_headers(None) {
        if let Ok(v) = header_value(v) {
            r.headers_mut().insert(HeaderName::from_static(lower(k)), v);
        }
    }
    r
}

/// A header's value, its text moved in (not copied); refused as `HeaderValue::from_str`
/// refuses.
fn header_value(v: String) -> Result<HeaderValue, http::header::InvalidHeaderValue> {
    HeaderValue::from_maybe_shared(Bytes::from(v))
}

/// A header name of [`Decision::all_headers`] in the lowercase `http` wants.
fn lower(name: &'static str) -> &'static str {
    match name {
        "X-RateLimit-Limit" => "x-ratelimit-limit",
        "X-RateLimit-Remaining" => "x-ratelimit-remaining",
        "X-RateLimit-Reset" => "x-ratelimit-reset",
        "Retry-After" => "retry-after",
        "RateLimit-Policy" => "ratelimit-policy",
        "RateLimit" => "ratelimit",
        _ => "x-ratelimit-other",
    }
}

/// An admitted response with the decision's headers less `Retry-After`. Behind another of
/// these layers it keeps the inner one's when that one has fewer remaining (or as many), or is
/// a 429 (a denial's headers stay whole), never a mix of both.
fn with_headers(mut response: Response<Body>, decision: &Decision) -> Response<Body> {
    let inner = response
        .headers()
        .get("x-ratelimit-remaining")
        .map(|v| v.as_bytes().to_vec());
    if let Some(inner) = inner {
        let digits = !inner.is_empty() && inner.iter().all(u8::is_ascii_digit);
        let fewer = std::str::from_utf8(&inner)
            .ok()
            .and_then(|s| s.parse::<i128>().ok())
            .is_some_and(|n| n <= i128::from(decision.remaining));
        if response.status() == StatusCode::TOO_MANY_REQUESTS || !digits || fewer {
            return response;
        }
    }
    let headers = response.headers_mut();
    for (k, v) in decision.all_headers(None) {
        let name = HeaderName::from_static(lower(k));
        if k == "Retry-After" {
            continue;
        }
        if let Ok(v) = header_value(v) {
            headers.insert(name, v);
        }
    }
    response
}

/// An axum handler serving `metrics` in Prometheus' text format, e.g.
/// `.route("/metrics", get(metrics_handler(layer.metrics())))`; mount it where only your
/// scraper reaches it.
pub fn metrics_handler(
    metrics: Arc<Metrics>,
) -> impl Fn() -> std::future::Ready<Response<Body>> + Clone + Send + Sync + 'static {
    move || {
        let mut r = Response::new(Body::from(metrics.prometheus()));
        r.headers_mut().insert(
            CONTENT_TYPE,
            HeaderValue::from_static("text/plain; version=0.0.4; charset=utf-8"),
        );
        std::future::ready(r)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_strings_are_pythons() {
        assert_eq!(json_string("ip"), r#""ip""#);
        assert_eq!(json_string("a\"b\\c"), r#""a\"b\\c""#);
        assert_eq!(
            json_string("é\u{1f600}\n\u{1}"),
            r#""\u00e9\ud83d\ude00\n\u0001""#
        );
    }

    #[test]
    fn tags_are_escaped() {
        assert_eq!(tag_text(None), "%none");
        assert_eq!(tag_text(Some("")), "%none");
        assert_eq!(tag_text(Some("a}{%b")), "a%7D%7B%25b");
    }
}
