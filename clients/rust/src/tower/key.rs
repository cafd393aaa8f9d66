//! Who a request is: the client's address (an IPv6 client by its /56, `X-Forwarded-For` only
//! from a trusted proxy), a header's value, or any function of the request's head.
//!
//! The address rules are the Python package's (its ASGI middleware behind uvicorn's
//! `--proxy-headers`): [`ip_key`] is `redis_rl.asgi.ip_key`, and [`forwarded_client`] is
//! uvicorn's `ProxyHeadersMiddleware` with `--forwarded-allow-ips` set to the trusted
//! networks. The tests compare both with the Python code on the same inputs.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Arc;

use http::header::{HeaderMap, HeaderName};
use http::request::Parts;

use crate::error::Error;

/// One trusted network: an address and its prefix length. `host` is true for an address
/// given without a length (it trusts that address only, and never a zoned one).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Network {
    addr: IpAddr,
    bits: u8,
    host: bool,
}

impl Network {
    fn contains(&self, ip: IpAddr) -> bool {
        match (self.addr, ip) {
            (IpAddr::V4(net), IpAddr::V4(ip)) => {
                let mask = u32::MAX.checked_shl(32 - u32::from(self.bits)).unwrap_or(0);
                u32::from(net) & mask == u32::from(ip) & mask
            }
            (IpAddr::V6(net), IpAddr::V6(ip)) => {
                let mask = u128::MAX
                    .checked_shl(128 - u32::from(self.bits))
                    .unwrap_or(0);
                u128::from(net) & mask == u128::from(ip) & mask
            }
            _ => false,
        }
    }
}

/// The proxies whose `X-Forwarded-For` the layer believes: addresses and CIDR networks
/// (`127.0.0.1`, `10.0.0.0/8`, `fd00::/8`). Empty by default: the header is ignored and the
/// client is the connection's peer.
///
/// An IPv4-mapped IPv6 address (`::ffff:10.0.0.1`, as a dual-stack listener reports an IPv4
/// peer) is looked up as its IPv4 address.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TrustedProxies {
    networks: Vec<Network>,
}

impl TrustedProxies {
    /// No proxy is trusted: `X-Forwarded-For` is never read.
    pub fn none() -> Self {
        Self::default()
    }

    /// The loopback addresses, `127.0.0.1` and `::1` (a proxy on the same host).
    pub fn loopback() -> Self {
        Self::new(["127.0.0.1", "::1"]).expect("loopback addresses")
    }

    /// Addresses and networks in CIDR notation; a network's address must have no bits set
    /// past its length (`10.0.0.0/8`, not `10.0.0.1/8`).
    ///
    /// ```
    /// use redis_rl::tower::TrustedProxies;
    /// let proxies = TrustedProxies::new(["10.0.0.0/8", "fd00::/8", "192.0.2.1"]).unwrap();
    /// assert!(proxies.contains("10.1.2.3".parse().unwrap()));
    /// assert!(TrustedProxies::new(["10.0.0.1/8"]).is_err());
    /// ```
    pub fn new<I, S>(networks: I) -> Result<Self, Error>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        let networks = networks
            .into_iter()
            .map(|text| parse_network(text.as_ref()))
            .collect::<Result<_, _>>()?;
        Ok(Self { networks })
    }

    /// True if `ip` is in one of the trusted networks.
    pub fn contains(&self, ip: IpAddr) -> bool {
        let ip = ip.to_canonical();
        self.networks.iter().any(|n| n.contains(ip))
    }

    /// True if no proxy is trusted.
    pub fn is_empty(&self) -> bool {
        self.networks.is_empty()
    }

    /// uvicorn's trust of one hop's text: an address (a zoned IPv6 address only through a
    /// network given with its length), never text that is not one.
    fn trusts_text(&self, host: &str) -> bool {
        match parse_ip(host) {
            Some((ip, zoned)) => {
                let ip = ip.to_canonical();
                self.networks
                    .iter()
                    .any(|n| !(zoned && n.host) && n.contains(ip))
            }
            None => false,
        }
    }
}

fn parse_network(text: &str) -> Result<Network, Error> {
    let refuse = || {
        Error::refused(format!(
            "a trusted proxy is an address or a network in CIDR notation (10.0.0.0/8): {text:?}"
        ))
    };
    let (addr, bits) = match text.split_once('/') {
        None => {
            let addr = text.parse::<IpAddr>().map_err(|_| refuse())?.to_canonical();
            let bits = if addr.is_ipv4() { 32 } else { 128 };
            return Ok(Network {
                addr,
                bits,
                host: true,
            });
        }
        Some((addr, bits)) => (addr, bits),
    };
    let addr: IpAddr = addr.parse().map_err(|_| refuse())?;
    if bits.is_empty() || bits.len() > 3 || !bits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(refuse());
    }
    let bits: u8 = bits.parse().map_err(|_| refuse())?;
    let max = if addr.is_ipv4() { 32 } else { 128 };
    if bits > max {
        return Err(refuse());
    }
    let network = Network {
        addr,
        bits,
        host: false,
    };
    let masked = match addr {
        IpAddr::V4(a) => IpAddr::V4(Ipv4Addr::from(
            u32::from(a) & u32::MAX.checked_shl(32 - u32::from(bits)).unwrap_or(0),
        )),
        IpAddr::V6(a) => IpAddr::V6(Ipv6Addr::from(
            u128::from(a) & u128::MAX.checked_shl(128 - u32::from(bits)).unwrap_or(0),
        )),
    };
    if masked != addr {
        return Err(Error::refused(format!(
            "a trusted network has host bits set: {text:?} (its network is {masked}/{bits})"
        )));
    }
    Ok(network)
}

/// Python `ipaddress.ip_address`'s grammar: dotted IPv4 (no leading zeros) or IPv6, an IPv6
/// address with an optional zone (`%eth0`: not empty, no second `%`). The bool: zoned.
fn parse_ip(text: &str) -> Option<(IpAddr, bool)> {
    if let Some((addr, zone)) = text.split_once('%') {
        if zone.is_empty() || zone.contains('%') {
            return None;
        }
        return addr.parse::<Ipv6Addr>().ok().map(|a| (IpAddr::V6(a), true));
    }
    if let Ok(a) = text.parse::<Ipv4Addr>() {
        return Some((IpAddr::V4(a), false));
    }
    text.parse::<Ipv6Addr>()
        .ok()
        .map(|a| (IpAddr::V6(a), false))
}

/// Python's `str.isspace` on one character of latin-1 text (what `str.strip()` strips).
fn py_space(c: char) -> bool {
    matches!(c, '\t'..='\r' | '\x1c'..='\x1f' | ' ' | '\u{85}' | '\u{a0}')
}

fn py_strip(s: &str) -> &str {
    s.trim_matches(py_space)
}

/// Whether Python's `int(text)` takes `text`: spaces around, a sign, ASCII digits with single
/// underscores between them.
fn py_int(text: &str) -> bool {
    let t = py_strip(text);
    let t = t.strip_prefix(['+', '-']).unwrap_or(t);
    !t.is_empty()
        && t.split('_')
            .all(|group| !group.is_empty() && group.bytes().all(|b| b.is_ascii_digit()))
}

/// uvicorn's `_parse_host_port`: the host of `[v6]:port`, `[v6]`, and `v4:port` (one colon,
/// an integer port); any other text is the host as it is.
fn host_of(value: &str) -> &str {
    if let Some(rest) = value.strip_prefix('[') {
        let Some(end) = rest.find(']') else {
            return value;
        };
        let (host, remainder) = (&rest[..end], &rest[end + 1..]);
        if remainder.is_empty() || remainder.starts_with(':') {
            return host;
        }
        return value;
    }
    if value.matches(':').count() == 1 {
        let (host, port) = value.rsplit_once(':').expect("one colon");
        if py_int(port) {
            return host;
        }
    }
    value
}

/// Header bytes as latin-1 text (every byte its own character), as ASGI servers decode them.
pub(crate) fn latin1(bytes: &[u8]) -> String {
    bytes.iter().map(|&b| char::from(b)).collect()
}

/// The client's address as text: the peer's, or when the peer is a trusted proxy, the
/// rightmost hop of `X-Forwarded-For` that is not a trusted proxy (every such header, joined
/// with `", "`, split at commas, each hop stripped of spaces, `host:port` and `[v6]:port`
/// read as their host). Every hop trusted: the leftmost. A hop that is not an address is
/// not trusted, so it is the client, as its text (its own counter). The peer stays the
/// client when the header is absent, or when the hop found is empty (`X-Forwarded-For:` with
/// no value, or a trailing comma). This is uvicorn 0.30+'s `ProxyHeadersMiddleware` with
/// `--forwarded-allow-ips` set to `trusted`.
pub fn forwarded_client(peer: IpAddr, headers: &HeaderMap, trusted: &TrustedProxies) -> String {
    if trusted.is_empty() || !trusted.contains(peer) {
        return peer.to_string();
    }
    let values: Vec<String> = headers
        .get_all(X_FORWARDED_FOR)
        .iter()
        .map(|v| latin1(v.as_bytes()))
        .collect();
    if values.is_empty() {
        return peer.to_string();
    }
    let joined = values.join(", ");
    let hops: Vec<&str> = joined.split(',').map(py_strip).collect();
    let host = hops
        .iter()
        .rev()
        .map(|hop| host_of(hop))
        .find(|host| !trusted.trusts_text(host))
        .unwrap_or_else(|| host_of(hops[0]));
    if host.is_empty() {
        peer.to_string()
    } else {
        host.to_string()
    }
}

/// The key text of a client address, `redis_rl.asgi.ip_key`'s: an IPv4 address itself; an
/// IPv4-mapped IPv6 address (`::ffff:1.2.3.4`) its IPv4 address; any other IPv6 address its
/// network of `ipv6_bits` in RFC 5952 text with the length (`2001:db8:1:1::1` is
/// `2001:db8:1::/56`, as express-rate-limit 8's `ipKeyGenerator` writes it). A zone index
/// (`fe80::1%eth0`) is dropped; text that is not an address is returned as it is.
///
/// ```
/// use redis_rl::tower::ip_key;
/// assert_eq!(ip_key("2001:db8:1:1ff::1", 56).unwrap(), "2001:db8:1:100::/56");
/// assert_eq!(ip_key("::ffff:203.0.113.7", 56).unwrap(), "203.0.113.7");
/// assert!(ip_key("::1", 0).is_err());
/// ```
pub fn ip_key(address: &str, ipv6_bits: u8) -> Result<String, Error> {
    check_bits(ipv6_bits)?;
    Ok(ip_key_checked(address, ipv6_bits))
}

pub(crate) fn check_bits(ipv6_bits: u8) -> Result<(), Error> {
    if (1..=128).contains(&ipv6_bits) {
        Ok(())
    } else {
        Err(Error::refused(format!(
            "ipv6_bits must be an integer from 1 to 128: {ipv6_bits}"
        )))
    }
}

fn ip_key_checked(address: &str, bits: u8) -> String {
    let text = address.split('%').next().unwrap_or("");
    if let Ok(v4) = text.parse::<Ipv4Addr>() {
        return v4.to_string();
    }
    let Ok(v6) = text.parse::<Ipv6Addr>() else {
        return address.to_string();
    };
    if let Some(v4) = v6.to_ipv4_mapped() {
        return v4.to_string();
    }
    let mask = u128::MAX.checked_shl(128 - u32::from(bits)).unwrap_or(0);
    format!("{}/{bits}", rfc5952(u128::from(v6) & mask))
}

/// RFC 5952 text as Python writes it: lowercase hex without leading zeros, the longest run of
/// two or more zero groups (the first of equal runs) as `::`, and no dotted IPv4 tail.
fn rfc5952(ip: u128) -> String {
    let groups: Vec<u16> = (0..8).map(|i| (ip >> (112 - 16 * i)) as u16).collect();
    let (mut best_at, mut best_len) = (0, 0);
    let mut i = 0;
    while i < 8 {
        let start = i;
        while i < 8 && groups[i] == 0 {
            i += 1;
        }
        if i - start > best_len {
            (best_at, best_len) = (start, i - start);
        }
        i = i.max(start + 1);
    }
    let hex = |gs: &[u16]| {
        gs.iter()
            .map(|g| format!("{g:x}"))
            .collect::<Vec<_>>()
            .join(":")
    };
    if best_len < 2 {
        return hex(&groups);
    }
    format!(
        "{}::{}",
        hex(&groups[..best_at]),
        hex(&groups[best_at + best_len..])
    )
}

const X_FORWARDED_FOR: HeaderName = HeaderName::from_static("x-forwarded-for");

type KeyFn = dyn Fn(&Parts) -> Option<String> + Send + Sync;

/// What a layer keys a request by: its identity for that layer, or `None`, and the layer does
/// not apply to the request (nothing is spent on it, as in the Python and Node middlewares).
#[derive(Clone)]
pub struct Identify(Kind);

#[derive(Clone)]
enum Kind {
    Address {
        trusted: TrustedProxies,
        ipv6_bits: u8,
    },
    Header(HeaderName),
    Func(Arc<KeyFn>),
}

impl fmt::Debug for Identify {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.0 {
            Kind::Address { trusted, ipv6_bits } => f
                .debug_struct("Identify::Address")
                .field("trusted", trusted)
                .field("ipv6_bits", ipv6_bits)
                .finish(),
            Kind::Header(name) => f.debug_tuple("Identify::Header").field(name).finish(),
            Kind::Func(_) => f.write_str("Identify::Func"),
        }
    }
}

/// Why a request has no identity where it must have one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Missing {
    /// No `ConnectInfo<SocketAddr>` (nor a `SocketAddr`) in the request's extensions: the
    /// server was not started with `into_make_service_with_connect_info::<SocketAddr>()`.
    Address,
}

impl Identify {
    /// The client's address keyed by [`ip_key`] with `ipv6_bits` (an IPv6 client by its
    /// network of that length), read from axum's `ConnectInfo<SocketAddr>` (serve the app
    /// with `into_make_service_with_connect_info::<SocketAddr>()`), or, when the peer is one
    /// of `trusted`, from `X-Forwarded-For` ([`forwarded_client`]).
    pub fn client_subnet(trusted: TrustedProxies, ipv6_bits: u8) -> Result<Self, Error> {
        check_bits(ipv6_bits)?;
        Ok(Self(Kind::Address { trusted, ipv6_bits }))
    }

    /// The client's address, an IPv6 client by its /56, trusting `X-Forwarded-For` from
    /// `trusted` only: `client_subnet(trusted, 56)`.
    pub fn client_ip(trusted: TrustedProxies) -> Self {
        Self(Kind::Address {
            trusted,
            ipv6_bits: 56,
        })
    }

    /// The value of request header `name` (any case: `x-api-key`, `X-Api-Key`), the first if
    /// it comes more than once, bytes as latin-1 text; `None` when absent or empty.
    pub fn header(name: &str) -> Result<Self, Error> {
        HeaderName::from_bytes(name.as_bytes())
            .map(|n| Self(Kind::Header(n)))
            .map_err(|_| Error::refused(format!("not an HTTP header name: {name:?}")))
    }

    /// Any function of the request's head (method, URI, headers, extensions); `None` skips
    /// the layer for the request.
    pub fn func<F>(f: F) -> Self
    where
        F: Fn(&Parts) -> Option<String> + Send + Sync + 'static,
    {
        Self(Kind::Func(Arc::new(f)))
    }

    /// The request's path (`/export`): a layer per endpoint.
    pub fn path() -> Self {
        Self::func(|parts| Some(parts.uri.path().to_string()))
    }

    /// The request's identity for this layer; `Err` when it keys by the address and the
    /// request carries none.
    pub(crate) fn identify(&self, parts: &Parts) -> Result<Option<String>, Missing> {
        match &self.0 {
            Kind::Address { trusted, ipv6_bits } => {
                let peer = peer_address(parts).ok_or(Missing::Address)?;
                let client = forwarded_client(peer, &parts.headers, trusted);
                Ok(Some(ip_key_checked(&client, *ipv6_bits)))
            }
            Kind::Header(name) => Ok(parts
                .headers
                .get(name)
                .map(|v| latin1(v.as_bytes()))
                .filter(|v| !v.is_empty())),
            Kind::Func(f) => Ok(f(parts)),
        }
    }
}

/// The connection's peer: axum's `ConnectInfo<SocketAddr>`, or a bare `SocketAddr` a server
/// of another kind put in the request's extensions.
pub(crate) fn peer_address(parts: &Parts) -> Option<IpAddr> {
    if let Some(info) = parts
        .extensions
        .get::<axum::extract::ConnectInfo<SocketAddr>>()
    {
        return Some(info.0.ip());
    }
    parts.extensions.get::<SocketAddr>().map(|a| a.ip())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(xff: &[&[u8]]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for v in xff {
            h.append("x-forwarded-for", http::HeaderValue::from_bytes(v).unwrap());
        }
        h
    }

    fn client(peer: &str, xff: &[&[u8]], trusted: &[&str]) -> String {
        let trusted = TrustedProxies::new(trusted).unwrap();
        forwarded_client(peer.parse().unwrap(), &headers(xff), &trusted)
    }

    #[test]
    fn ip_keys_are_the_python_packages() {
        for (address, bits, key) in [
            ("2001:db8:1:1::1", 56, "2001:db8:1::/56"),
            ("2001:db8:1:1ff::1", 56, "2001:db8:1:100::/56"),
            ("2001:DB8:0001:0001::0001", 64, "2001:db8:1:1::/64"),
            ("2001:0:0:1::", 128, "2001:0:0:1::/128"),
            ("2001:0:0:1:0:0:1:1", 128, "2001::1:0:0:1:1/128"),
            ("2001:db8:0:1:1:1:1:1", 128, "2001:db8:0:1:1:1:1:1/128"),
            ("::", 56, "::/56"),
            ("::1", 128, "::1/128"),
            ("::1", 1, "::/1"),
            ("fe80::1%eth0", 64, "fe80::/64"),
            ("::ffff:1.2.3.4", 56, "1.2.3.4"),
            ("1.2.3.4", 56, "1.2.3.4"),
            ("testclient", 56, "testclient"),
            ("/run/app.sock", 56, "/run/app.sock"),
            ("", 56, ""),
            ("01.2.3.4", 56, "01.2.3.4"),
            ("1.2.3.4%eth0", 56, "1.2.3.4"),
        ] {
            assert_eq!(ip_key(address, bits).unwrap(), key, "{address} /{bits}");
        }
        for bits in [0, 129, 255] {
            assert_eq!(
                ip_key("::1", bits).unwrap_err().to_string(),
                format!("ipv6_bits must be an integer from 1 to 128: {bits}")
            );
        }
    }

    #[test]
    fn every_address_of_a_56_is_one_key() {
        let base: u128 = "2001:db8:aa:ff00::".parse::<Ipv6Addr>().unwrap().into();
        for low in [0u128, 1, 0xffff, 0xff_ffff_ffff_ffff_ffff] {
            let ip = Ipv6Addr::from(base | low).to_string();
            assert_eq!(ip_key(&ip, 56).unwrap(), "2001:db8:aa:ff00::/56", "{ip}");
        }
        assert_eq!(
            ip_key("2001:db8:aa:100::1", 56).unwrap(),
            "2001:db8:aa:100::/56"
        );
    }

    #[test]
    fn x_forwarded_for_counts_only_from_a_trusted_peer() {
        // An untrusted peer: the header is whatever the client wrote, and ignored.
        assert_eq!(
            client("198.51.100.9", &[b"203.0.113.7"], &["127.0.0.1"]),
            "198.51.100.9"
        );
        assert_eq!(
            client("198.51.100.9", &[b"203.0.113.7"], &[]),
            "198.51.100.9"
        );
        // A trusted peer: the rightmost hop that is not a trusted proxy.
        assert_eq!(
            client("127.0.0.1", &[b"203.0.113.7"], &["127.0.0.1"]),
            "203.0.113.7"
        );
        assert_eq!(
            client(
                "10.0.0.2",
                &[b"6.6.6.6, 203.0.113.7, 10.0.0.1"],
                &["10.0.0.0/8"]
            ),
            "203.0.113.7"
        );
        // Every hop trusted: the leftmost.
        assert_eq!(
            client("10.0.0.2", &[b"10.0.0.3, 10.0.0.1"], &["10.0.0.0/8"]),
            "10.0.0.3"
        );
        // No header, an empty one, a trailing comma: the peer.
        assert_eq!(client("127.0.0.1", &[], &["127.0.0.1"]), "127.0.0.1");
        assert_eq!(client("127.0.0.1", &[b""], &["127.0.0.1"]), "127.0.0.1");
        assert_eq!(
            client("127.0.0.1", &[b"203.0.113.7,"], &["127.0.0.1"]),
            "127.0.0.1"
        );
        // Two headers are one list, the second after the first.
        assert_eq!(
            client("127.0.0.1", &[b"203.0.113.7", b"127.0.0.1"], &["127.0.0.1"]),
            "203.0.113.7"
        );
        // Ports and brackets; text that is not an address is the client as it is.
        assert_eq!(
            client("127.0.0.1", &[b"203.0.113.7:4711"], &["127.0.0.1"]),
            "203.0.113.7"
        );
        assert_eq!(
            client("127.0.0.1", &[b"[2001:db8::1]:80"], &["127.0.0.1"]),
            "2001:db8::1"
        );
        assert_eq!(
            client("127.0.0.1", &[b"unknown"], &["127.0.0.1"]),
            "unknown"
        );
        assert_eq!(
            client("127.0.0.1", &[b"1.2.3.4:x"], &["127.0.0.1"]),
            "1.2.3.4:x"
        );
        // A dual-stack listener's IPv4 peer is its IPv4 address.
        assert_eq!(
            client("::ffff:127.0.0.1", &[b"203.0.113.7"], &["127.0.0.1"]),
            "203.0.113.7"
        );
        // Latin-1 bytes are text, never an error.
        assert_eq!(
            client("127.0.0.1", &[b"\xe9t\xe9"], &["127.0.0.1"]),
            "\u{e9}t\u{e9}"
        );
    }

    #[test]
    fn trusted_networks_are_addresses_and_cidr() {
        let t = TrustedProxies::new(["10.0.0.0/8", "fd00::/8", "192.0.2.1"]).unwrap();
        assert!(t.contains("10.255.0.1".parse().unwrap()));
        assert!(t.contains("::ffff:10.0.0.1".parse().unwrap()));
        assert!(t.contains("fd12::1".parse().unwrap()));
        assert!(t.contains("192.0.2.1".parse().unwrap()));
        assert!(!t.contains("192.0.2.2".parse().unwrap()));
        assert!(!t.contains("11.0.0.1".parse().unwrap()));
        for bad in [
            "10.0.0.1/8",
            "10.0.0.0/33",
            "::/129",
            "proxy",
            "10.0.0.0/",
            "1.2.3.4/+8",
        ] {
            assert!(TrustedProxies::new([bad]).is_err(), "{bad}");
        }
        assert!(TrustedProxies::new(["0.0.0.0/0", "::/0"])
            .unwrap()
            .contains("1.1.1.1".parse().unwrap()));
    }

    #[test]
    fn header_and_function_identities() {
        let (parts, _) = http::Request::builder()
            .uri("/export?x=1")
            .header("X-Api-Key", "k1")
            .header("x-api-key", "k2")
            .header("x-empty", "")
            .body(())
            .unwrap()
            .into_parts();
        let id = |i: Identify| i.identify(&parts).unwrap();
        assert_eq!(
            id(Identify::header("x-api-key").unwrap()),
            Some("k1".into())
        );
        assert_eq!(
            id(Identify::header("X-API-KEY").unwrap()),
            Some("k1".into())
        );
        assert_eq!(id(Identify::header("x-empty").unwrap()), None);
        assert_eq!(id(Identify::header("x-absent").unwrap()), None);
        assert!(Identify::header("bad name").is_err());
        assert_eq!(id(Identify::path()), Some("/export".into()));
        assert_eq!(
            id(Identify::func(|p| Some(p.method.to_string()))),
            Some("GET".into())
        );
        let address = Identify::client_ip(TrustedProxies::none());
        assert_eq!(address.identify(&parts), Err(Missing::Address));
    }

    #[test]
    fn the_address_from_connect_info() {
        let req = |peer: &str, xff: Option<&str>| {
            let mut b = http::Request::builder().uri("/");
            if let Some(x) = xff {
                b = b.header("x-forwarded-for", x);
            }
            let (mut parts, _) = b.body(()).unwrap().into_parts();
            parts.extensions.insert(axum::extract::ConnectInfo(
                peer.parse::<SocketAddr>().unwrap(),
            ));
            parts
        };
        let ip = Identify::client_ip(TrustedProxies::loopback());
        let at = |p: &str, x: Option<&str>| ip.identify(&req(p, x)).unwrap().unwrap();
        assert_eq!(at("[2001:db8:1:1::1]:5000", None), "2001:db8:1::/56");
        assert_eq!(at("[::ffff:203.0.113.7]:5000", None), "203.0.113.7");
        assert_eq!(at("198.51.100.1:5000", Some("203.0.113.7")), "198.51.100.1");
        assert_eq!(
            at("127.0.0.1:5000", Some("2001:db8:1:ff::9")),
            "2001:db8:1::/56"
        );
        assert_eq!(at("[::1]:5000", Some("::ffff:1.2.3.4")), "1.2.3.4");
        let sub = Identify::client_subnet(TrustedProxies::none(), 64).unwrap();
        assert_eq!(
            sub.identify(&req("[2001:db8:1:2:3::1]:1", None))
                .unwrap()
                .unwrap(),
            "2001:db8:1:2::/64"
        );
        assert!(Identify::client_subnet(TrustedProxies::none(), 0).is_err());
    }
}
