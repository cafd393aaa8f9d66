#!/usr/bin/env bash
# Builds functions/rl.lua, the one file `FUNCTION LOAD` takes, by joining the library's
# parts (functions/parts/*.lua: the exact integers, the facts, the grammar and errors, state,
# each algorithm, the commands, registration) in name order. Edit the parts, then run this
# (or `make library`). One part, 04-facts.lua, is generated from facts/rl.toml: this first
# runs scripts/generate-facts.py, which rewrites it (and the other languages' facts).
#
# The client packages carry the same file, produced when they are built (not committed):
# the Python package's build hook (clients/python/hatch_build.py) copies it into the wheel
# and the sdist, and the Node package's build (clients/node/scripts/write-library.mjs)
# writes it into src/library.ts as a string constant.
#
#   scripts/build-library.sh           regenerate the facts, rewrite functions/rl.lua
#   scripts/build-library.sh --check   exit 1 if functions/rl.lua is not the parts' join
set -euo pipefail
cd "$(dirname "$0")/.."

joined() { cat functions/parts/*.lua; }

case "${1:-}" in
  --check)
    if ! joined | cmp -s - functions/rl.lua; then
      echo "functions/rl.lua is stale: run scripts/build-library.sh (make library)" >&2
      exit 1
    fi
    ;;
  "")
    python3 scripts/generate-facts.py
    joined >functions/rl.lua.tmp
    mv functions/rl.lua.tmp functions/rl.lua
    ;;
  *)
    echo "usage: scripts/build-library.sh [--check]" >&2
    exit 2
    ;;
esac
