#!/usr/bin/env bash
# Builds functions/rl.lua, the one file `FUNCTION LOAD` takes, by joining the library's
# parts (functions/parts/*.lua: the exact integers, the grammar and errors, state, each
# algorithm, the commands, registration) in name order. Edit the parts, then run this
# (or `make library`). The client packages ship the same file: it is copied to each of
# COPIES byte for byte.
#
#   scripts/build-library.sh           rewrite functions/rl.lua and its copies
#   scripts/build-library.sh --check   exit 1 if functions/rl.lua is not the parts' join, or
#                                      a copy is not functions/rl.lua
set -euo pipefail
cd "$(dirname "$0")/.."

COPIES=(clients/python/src/redis_rl/rl.lua)

joined() { cat functions/parts/*.lua; }

case "${1:-}" in
  --check)
    if ! joined | cmp -s - functions/rl.lua; then
      echo "functions/rl.lua is stale: run scripts/build-library.sh (make library)" >&2
      exit 1
    fi
    for copy in "${COPIES[@]}"; do
      if ! cmp -s functions/rl.lua "$copy"; then
        echo "$copy is not functions/rl.lua: run scripts/build-library.sh (make library)" >&2
        exit 1
      fi
    done
    ;;
  "")
    joined >functions/rl.lua.tmp
    mv functions/rl.lua.tmp functions/rl.lua
    for copy in "${COPIES[@]}"; do cp functions/rl.lua "$copy"; done
    ;;
  *)
    echo "usage: scripts/build-library.sh [--check]" >&2
    exit 2
    ;;
esac
