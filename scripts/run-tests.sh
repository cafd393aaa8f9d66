#!/usr/bin/env bash
# Runs every test: the pure unit tests and the integration tests, which start
# their own redis-server and valkey-server processes. Uses cargo-nextest when
# installed (one process per test, in parallel), else cargo test.
set -euo pipefail
cd "$(dirname "$0")/.."
if cargo nextest --version >/dev/null 2>&1; then
  exec cargo nextest run --release --no-fail-fast "$@"
else
  exec cargo test --release --no-fail-fast "$@"
fi
