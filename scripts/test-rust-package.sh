#!/usr/bin/env bash
# The Rust client crate (clients/rust, `redis-rl`): `cargo fmt --check`, `cargo clippy -D
# warnings` on every target, `cargo doc` with warnings denied, then every test: its unit tests,
# tests/*.rs (which start their own redis-server, valkey-server and Redis Cluster processes:
# RL_MODULE is the module they load, default target/release/librl.so; RL_VALKEY_SERVER the
# Valkey, default .tools/bin/valkey-server), the examples (tests/examples.rs runs them; docs/rust.md
# shows them verbatim), and the rustdoc examples, which run against a redis-server with the
# module started here (RL_REDIS_URL). Builds in clients/rust/target unless CARGO_TARGET_DIR
# says otherwise; Cargo.lock is used as it is (--locked). Arguments go to `cargo test`.
set -euo pipefail
cd "$(dirname "$0")/.."
export RL_MODULE=${RL_MODULE:-$PWD/target/release/librl.so}
[ -f "$RL_MODULE" ] || { echo "test-rust-package: no module at $RL_MODULE: cargo build --release" >&2; exit 1; }
features=()
# The tower layer, where it exists, is built, linted, documented and tested too.
if [ -e clients/rust/src/tower.rs ] || [ -d clients/rust/src/tower ]; then
  features=(--features tower)
fi

cd clients/rust
cargo fmt --check
cargo clippy --locked --all-targets "${features[@]}" -- -D warnings
RUSTDOCFLAGS="-D warnings" cargo doc --locked --no-deps "${features[@]}"

port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
work=$(mktemp -d)
redis-server --port "$port" --bind 127.0.0.1 --save "" --appendonly no --dir "$work" \
  --loadmodule "$RL_MODULE" >"$work/server.log" 2>&1 &
server=$!
trap 'kill "$server" 2>/dev/null; wait "$server" 2>/dev/null; rm -rf "$work"' EXIT
for _ in $(seq 200); do
  [ "$(redis-cli -p "$port" ping 2>/dev/null)" = PONG ] && break
  sleep 0.05
done
export RL_REDIS_URL=redis://127.0.0.1:$port/
cargo test --locked "${features[@]}" --no-fail-fast "$@"
