#!/usr/bin/env bash
# Runs every test: the Rust unit and integration tests, which start their own redis-server
# and valkey-server processes (and one run under valgrind); the Python tests (tests/python:
# the examples, the client snippets, and the documentation's examples, claims and links) in
# .tools/venv; the Python package's (scripts/test-python-package.sh: built, installed into a
# fresh virtualenv, tested); the Node package's (scripts/test-node-package.sh: packed,
# installed into a fresh project); the NGINX package's (scripts/test-nginx-package.sh:
# real NGINX over HTTP); and the Rust client crate's (scripts/test-rust-package.sh: fmt,
# clippy, rustdoc, its tests and examples against real servers). Arguments go to cargo.
#
# The Rust tests run first, 8 at a time. The five other suites spend most of their time
# waiting on their servers and HTTP, so they then run side by side, each with several tests
# at a time; each one's output goes to its own log, printed whole when every suite is done.
# Every suite always runs; the script fails if any does.
set -uo pipefail
cd "$(dirname "$0")/.."

logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT
suites=()
# Starts a suite in the background: `name command...`; its output goes to $logs/name.
start() {
  local name=$1
  shift
  suites+=("$name")
  ( SECONDS=0; "$@" >"$logs/$name" 2>&1; status=$?
    echo "$status $SECONDS" >"$logs/$name.status" ) &
}

# The Rust tests build with the harness profile (release without LTO: Cargo.toml) with
# RL.DEBUG compiled in; the library built so is the module the RL.DEBUG tests load (sharing
# every dependency's build with the tests). The other tests decide through RL_MODULE, the
# release build users get. Most tests wait on servers: 8 run at a time.
SECONDS=0
# The Rust crate's builds (clippy, rustdoc, its tests and examples: `cargo test --no-run`),
# at the lowest priority beside the module's tests, which mostly wait on their servers: its
# suite then runs with the others, built (a build that failed here fails there, with its
# errors).
nice -n 19 bash scripts/test-rust-package.sh --no-run >/dev/null 2>&1 &
prebuild=$!
build=(--profile harness --features debug-commands)
if cargo build "${build[@]}" --lib; then
  export RL_DEBUG_MODULE=$PWD/target/harness/librl.so
  if cargo nextest --version >/dev/null 2>&1; then
    cargo nextest run --cargo-profile harness --features debug-commands --no-fail-fast \
      --test-threads 8 "$@"
    rust=$?
    # The wait scenarios on Redis 7.0 under valgrind's memcheck (tests/it/memcheck.rs).
    cargo nextest run --cargo-profile harness --features debug-commands --test it \
      --run-ignored only -E 'test(/^memcheck::/)' "$@" || rust=1
  else
    cargo test "${build[@]}" --no-fail-fast "$@" -- --test-threads 8
    rust=$?
    cargo test "${build[@]}" --test it memcheck:: "$@" -- --ignored || rust=1
  fi
else
  rust=1
fi
summary="Rust tests $([ $rust -eq 0 ] && echo ok || echo "FAILED (exit $rust)") in ${SECONDS} s"

# The Rust crate's builds, started above, done before the suites start: compiling beside
# them would take their cores.
wait "$prebuild" || true

if [ -x .tools/venv/bin/python ]; then
  start "Python tests" .tools/venv/bin/python -m pytest tests/python -q -n 3
  start "Python package" bash scripts/test-python-package.sh -n 4
  start "NGINX package" bash scripts/test-nginx-package.sh
else
  echo "run-tests: .tools/venv is missing: run scripts/install-deps.sh (or make test)" >&2
  for name in "Python tests" "Python package" "NGINX package"; do
    suites+=("$name")
    echo "1 0" >"$logs/$name.status"
  done
fi
start "Node package" bash scripts/test-node-package.sh --test-concurrency=4
start "Rust package" bash scripts/test-rust-package.sh

wait
failed=$rust
for name in "${suites[@]}"; do
  read -r status seconds <"$logs/$name.status"
  echo "===== $name: exit $status, ${seconds} s"
  cat "$logs/$name" 2>/dev/null
  if [ "$status" -eq 0 ]; then
    summary+=", $name ok in $seconds s"
  else
    summary+=", $name FAILED (exit $status)"
    failed=1
  fi
done
echo "run-tests: $summary" >&2
[ $failed -eq 0 ]
