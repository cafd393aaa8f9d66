#!/usr/bin/env bash
# The NGINX package (clients/nginx) as a user runs it: real NGINX from Debian's packages
# (nginx, libnginx-mod-http-lua, lua-nginx-redis) loading clients/nginx/lib, in front of an
# upstream, driven over HTTP on Redis and Valkey with and without the module and on Redis
# Clusters (clients/nginx/tests, pytest in .tools/venv). Arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/../clients/nginx"
../../.tools/venv/bin/python -m pytest -q -p no:cacheprovider tests "$@"
