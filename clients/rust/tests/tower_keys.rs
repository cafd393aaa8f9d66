//! The layer's client addresses against the Python package's on the same inputs: for
//! thousands of peers, trusted networks and `X-Forwarded-For` headers (spoofed, malformed,
//! with ports, zones, empty hops, latin-1 bytes), `ip_key(forwarded_client(..))` here equals
//! `redis_rl.asgi.ip_key` of the client that uvicorn's `ProxyHeadersMiddleware` (the Python
//! tests' server, with `--forwarded-allow-ips` set to the same networks) puts in the scope.
//! Needs `.tools/venv` (`make test` installs it).
#![cfg(feature = "tower")]

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};

use http::{HeaderMap, HeaderValue};
use redis_rl::tower::{forwarded_client, ip_key, TrustedProxies};

const PYTHON: &str = r#"
import asyncio, json, sys
from uvicorn.middleware.proxy_headers import ProxyHeadersMiddleware
from redis_rl.asgi import ip_key

async def client_of(case):
    seen = {}
    async def app(scope, receive, send):
        seen["client"] = scope["client"][0]
    mw = ProxyHeadersMiddleware(app, trusted_hosts=case["trusted"])
    headers = [(b"x-forwarded-for", v.encode("latin-1")) for v in case["xff"]]
    await mw({"type": "http", "client": (case["peer"], 4321), "headers": headers}, None, None)
    return ip_key(seen["client"], 56)

async def main():
    cases = json.load(sys.stdin)
    json.dump([await client_of(c) for c in cases], sys.stdout)

asyncio.run(main())
"#;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// A small deterministic generator (xorshift): the same cases every run.
struct Draw(u64);

impl Draw {
    fn pick<'a, T>(&mut self, from: &'a [T]) -> &'a T {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        &from[(self.0 % from.len() as u64) as usize]
    }
}

#[test]
fn client_addresses_equal_uvicorn_and_the_python_package() {
    let python = root().join(".tools/venv/bin/python");
    assert!(
        python.exists(),
        "no {python:?}: run `make test` once to install the tools"
    );
    let peers = [
        "127.0.0.1",
        "10.0.0.2",
        "198.51.100.9",
        "::1",
        "fd00::5",
        "2001:db8:1:1::1",
    ];
    let trusted: [&[&str]; 6] = [
        &["127.0.0.1"],
        &["10.0.0.0/8", "127.0.0.1"],
        &["::1", "fd00::/8"],
        &[],
        &["fe80::/10", "127.0.0.0/8"],
        &["fe80::1", "127.0.0.1", "::1"],
    ];
    let hops = [
        "203.0.113.7",
        "10.0.0.1",
        "  10.0.0.3 ",
        "",
        " ",
        "unknown",
        "1.2.3.4:80",
        "[2001:db8::1]:443",
        "[::1]",
        "[abc",
        "[::1]x",
        "2001:db8:1:1::9",
        "fe80::1%eth0",
        "fe80::2%",
        "1.2.3.4:x",
        "01.2.3.4",
        "1.2.3.4: 8_0",
        "1.2.3.4:+80",
        "1.2.3.4:8__0",
        "\u{e9}t\u{e9}",
        "fd00::9",
        "1:2:3:4:5:6:7::",
        "1.2.3.4\t",
        "::ffff:1.2.3.4",
        "127.0.0.1",
        "::1",
        "2001:DB8:1:1FF::1",
        "[1.2.3.4]:5",
        "a:b:c",
        "1.2.3.4%eth0",
        "\u{a0}203.0.113.8\u{a0}",
        "\u{85}10.0.0.4",
    ];
    let mut draw = Draw(0x9e37_79b9_7f4a_7c15);
    let mut cases = Vec::new();
    for _ in 0..3000 {
        let peer = *draw.pick(&peers);
        let trusted = *draw.pick(&trusted);
        let headers = *draw.pick(&[0usize, 1, 1, 1, 2]);
        let xff: Vec<String> = (0..headers)
            .map(|_| {
                let n = *draw.pick(&[1usize, 2, 3, 4]);
                let hops: Vec<&str> = (0..n).map(|_| *draw.pick(&hops)).collect();
                hops.join(*draw.pick(&[",", ", ", " ,"]))
            })
            .collect();
        cases.push((peer, trusted, xff));
    }
    let json: Vec<serde_json::Value> = cases
        .iter()
        .map(|(peer, trusted, xff)| serde_json::json!({"peer": peer, "trusted": trusted, "xff": xff}))
        .collect();
    let mut child = Command::new(&python)
        .args(["-c", PYTHON])
        .env("PYTHONPATH", root().join("clients/python/src"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("run the venv's python");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(serde_json::to_string(&json).unwrap().as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "python failed");
    let expected: Vec<String> = serde_json::from_slice(&out.stdout).unwrap();
    let mut differ = Vec::new();
    for ((peer, trusted, xff), want) in cases.iter().zip(&expected) {
        let mut headers = HeaderMap::new();
        for v in xff {
            let bytes: Vec<u8> = v.chars().map(|c| c as u32 as u8).collect();
            headers.append("x-forwarded-for", HeaderValue::from_bytes(&bytes).unwrap());
        }
        let proxies = TrustedProxies::new(*trusted).unwrap();
        let got = ip_key(
            &forwarded_client(peer.parse().unwrap(), &headers, &proxies),
            56,
        )
        .unwrap();
        if &got != want {
            differ.push(format!(
                "peer {peer} trusted {trusted:?} xff {xff:?}: {got:?}, python {want:?}"
            ));
        }
    }
    assert!(
        differ.is_empty(),
        "{} of {} differ:\n{}",
        differ.len(),
        cases.len(),
        differ.join("\n")
    );
}
