#!/usr/bin/env bash
# Runs every test: the Rust unit and integration tests, which start their own
# redis-server and valkey-server processes (and one run under valgrind), then the Python
# tests (tests/python: the gateway example, the client snippets, and the documentation's
# examples, claims and links) in .tools/venv. Uses cargo-nextest when installed (one
# process per test, in parallel), else cargo test. Both suites always run; the script fails
# if either does. Arguments go to cargo.
set -uo pipefail
cd "$(dirname "$0")/.."

if cargo nextest --version >/dev/null 2>&1; then
  cargo nextest run --release --no-fail-fast "$@"
  rust=$?
  # The wait scenarios on Redis 7.0 under valgrind's memcheck (tests/memcheck.rs).
  cargo nextest run --release --test memcheck --run-ignored only "$@" || rust=1
else
  cargo test --release --no-fail-fast "$@"
  rust=$?
  cargo test --release --test memcheck "$@" -- --ignored || rust=1
fi

if [ -x .tools/venv/bin/python ]; then
  .tools/venv/bin/python -m pytest tests/python -q
  python=$?
else
  echo "run-tests: .tools/venv is missing: run scripts/install-deps.sh (or make test)" >&2
  python=1
fi

status() { if [ "$1" -eq 0 ]; then echo "ok"; else echo "FAILED (exit $1)"; fi; }
echo "run-tests: Rust tests $(status $rust), Python tests $(status $python)" >&2
[ $rust -eq 0 ] && [ $python -eq 0 ]
