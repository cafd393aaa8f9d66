#!/usr/bin/env bash
# The NGINX package (clients/nginx) as users get it: packed (scripts/pack-nginx.sh), unpacked
# into a fresh folder, and its lib/ served by real NGINX from Debian's packages (nginx,
# libnginx-mod-http-lua, lua-nginx-redis) in front of an upstream, driven over HTTP on Redis
# and Valkey with and without the module and on Redis Clusters (clients/nginx/tests, pytest in
# .tools/venv), after luacheck on the Lua files and ruff on the tests. Arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
(cd clients/nginx && luacheck --no-color --quiet lib && ../../.tools/venv/bin/ruff check --no-cache .)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
archive=$(bash scripts/pack-nginx.sh "$work")
tar xzf "$archive" -C "$work"
export RL_NGINX_LIB=$(ls -d "$work"/rl-nginx-*/lib)
cd clients/nginx
../../.tools/venv/bin/python -m pytest -q -p no:cacheprovider tests "$@"
