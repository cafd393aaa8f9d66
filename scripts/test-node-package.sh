#!/usr/bin/env bash
# The Node package (clients/node) as a user gets it: its dev dependencies installed
# (`npm ci`), type-checked, packed with `npm pack` (which builds it), and the tarball
# installed into a fresh project (clients/node/test/project.json) where its tests and
# examples run against real servers. Arguments go to `node --test`.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd clients/node
npm ci --silent --no-audit --no-fund
npm run --silent typecheck
npm pack --silent --pack-destination "$work" >"$work/pack.log"
project=$work/project
mkdir -p "$project"
cp test/project.json "$project/package.json"
cp -r test examples "$project/"
cd "$project"
npm install --silent --no-audit --no-fund "$work"/redis-rl-*.tgz
RL_ROOT=$root node --test --test-reporter=dot "$@" test/*.test.mjs
