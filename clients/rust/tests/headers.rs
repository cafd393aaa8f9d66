//! The headers equal the Python package's for the same decision: each reply below, by each
//! policy, given to redis_rl.Decision (clients/python/src, in .tools/venv's Python or
//! RL_PYTHON) and to this crate's Decision, gives the same fields, in the same order.

use std::process::Command;

use redis_rl::{Backend, Decision, Policy, QuotaUnit};

fn python() -> String {
    std::env::var("RL_PYTHON").unwrap_or_else(|_| {
        let venv = concat!(env!("CARGO_MANIFEST_DIR"), "/../../.tools/venv/bin/python");
        if std::path::Path::new(venv).exists() {
            venv.into()
        } else {
            "python3".into()
        }
    })
}

#[test]
fn headers_equal_the_python_packages() {
    // (Rust policy, the Python expression of the same policy).
    let policies: Vec<(Option<Policy>, &str)> = vec![
        (
            Some(Policy::gcra(10, "1s").burst(5).name("api")),
            "policy.gcra(10, '1s', 5, 'api')",
        ),
        (
            Some(Policy::token_bucket(100, 7, "1m")),
            "policy.token_bucket(100, 7, '1m')",
        ),
        (Some(Policy::leaky(20, 3, 90)), "policy.leaky(20, 3, 90)"),
        (
            Some(Policy::sliding(100, "1500ms").name("s")),
            "policy.sliding(100, '1500ms', 's')",
        ),
        (
            Some(Policy::sliding_log(5, "15m")),
            "policy.sliding_log(5, '15m')",
        ),
        (
            Some(Policy::fixed(10, "1d").penalty("1h", None)),
            "policy.fixed(10, '1d', penalty='1h')",
        ),
        (
            Some(Policy::quota(1000, QuotaUnit::Week).name("w")),
            "policy.quota(1000, 'WEEK', 'w')",
        ),
        (
            Some(Policy::quota(1000, QuotaUnit::Day).tz("+05:30")),
            "policy.quota(1000, 'DAY', tz='+05:30')",
        ),
        (Some(Policy::named("free")), "'free'"),
        (None, "None"),
    ];
    let replies: [[i64; 5]; 6] = [
        [1, 5, 4, 0, 200],
        [0, 5, 0, 1001, 2500],
        [0, 10, 3, -1, 0],
        [1, 10, 0, 700, 999],
        [0, 1, 0, 1, 1],
        [1, 0, 0, 0, 0],
    ];
    let mut script = String::from(
        "import sys\nsys.path.insert(0, sys.argv[1])\nfrom redis_rl import policy\nfrom redis_rl.decision import Decision\n",
    );
    let mut expected = String::new();
    for (p, py) in &policies {
        for r in replies {
            for name in [None, Some("edge")] {
                let d = Decision::new(r, Backend::Module, p.clone());
                for (k, v) in d.headers() {
                    expected.push_str(&format!("{k}: {v}\n"));
                }
                for (k, v) in d.all_headers(name) {
                    expected.push_str(&format!("{k}: {v}\n"));
                }
                expected.push_str("--\n");
                let n = name.map_or("None".to_string(), |n| format!("'{n}'"));
                script.push_str(&format!(
                    "d = Decision.from_reply({r:?}, 'module', {py})\n\
                     for k, v in d.headers().items(): print(f'{{k}}: {{v}}')\n\
                     for k, v in d.all_headers({n}).items(): print(f'{{k}}: {{v}}')\n\
                     print('--')\n"
                ));
            }
        }
    }
    let src = concat!(env!("CARGO_MANIFEST_DIR"), "/../python/src");
    let out = Command::new(python())
        .arg("-c")
        .arg(&script)
        .arg(src)
        .output()
        .expect("python");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let got = String::from_utf8(out.stdout).unwrap();
    for (i, (a, b)) in got.split("--\n").zip(expected.split("--\n")).enumerate() {
        assert_eq!(a, b, "case {i}");
    }
    assert_eq!(got, expected);
}
