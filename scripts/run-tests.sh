#!/usr/bin/env bash
# Runs every test: the Rust unit and integration tests, which start their own
# redis-server and valkey-server processes (and one run under valgrind), then the Python
# tests (tests/python: the gateway example, the client snippets, and the documentation's
# examples, claims and links) in .tools/venv, then the Python package's
# (scripts/test-python-package.sh: built, installed into a fresh virtualenv, tested) and the
# Node package's (scripts/test-node-package.sh: packed, installed into a fresh project), then
# the NGINX package's (scripts/test-nginx-package.sh: real NGINX over HTTP). Uses
# cargo-nextest when installed (one process per test, in parallel), else cargo test. Every
# suite always runs; the script fails if any does. Arguments go to cargo.
set -uo pipefail
cd "$(dirname "$0")/.."

# The tests' own builds use the harness profile (release without LTO: Cargo.toml) with
# RL.DEBUG compiled in; the library built so is the module the RL.DEBUG tests load (sharing
# every dependency's build with the tests). The other tests decide through RL_MODULE, the
# release build users get.
build=(--profile harness --features debug-commands)
cargo build "${build[@]}" --lib || exit 1
export RL_DEBUG_MODULE=$PWD/target/harness/librl.so
if cargo nextest --version >/dev/null 2>&1; then
  cargo nextest run --cargo-profile harness --features debug-commands --no-fail-fast "$@"
  rust=$?
  # The wait scenarios on Redis 7.0 under valgrind's memcheck (tests/it/memcheck.rs).
  cargo nextest run --cargo-profile harness --features debug-commands --test it \
    --run-ignored only -E 'test(/^memcheck::/)' "$@" || rust=1
else
  cargo test "${build[@]}" --no-fail-fast "$@"
  rust=$?
  cargo test "${build[@]}" --test it memcheck:: "$@" -- --ignored || rust=1
fi

if [ -x .tools/venv/bin/python ]; then
  .tools/venv/bin/python -m pytest tests/python -q
  python=$?
  # The Python package, built and installed into a fresh virtualenv.
  bash scripts/test-python-package.sh
  package=$?
else
  echo "run-tests: .tools/venv is missing: run scripts/install-deps.sh (or make test)" >&2
  python=1
  package=1
fi

# The Node package, packed and installed into a fresh project.
bash scripts/test-node-package.sh
node=$?

# The NGINX package, served by real NGINX.
if [ -x .tools/venv/bin/python ]; then
  bash scripts/test-nginx-package.sh
  nginx=$?
else
  nginx=1
fi

status() { if [ "$1" -eq 0 ]; then echo "ok"; else echo "FAILED (exit $1)"; fi; }
echo "run-tests: Rust tests $(status $rust), Python tests $(status $python)," \
  "Python package $(status $package), Node package $(status $node)," \
  "NGINX package $(status $nginx)" >&2
[ $rust -eq 0 ] && [ $python -eq 0 ] && [ $package -eq 0 ] && [ $node -eq 0 ] && [ $nginx -eq 0 ]
