#!/usr/bin/env bash
# The NGINX package as users get it: OUTDIR/rl-nginx-<version>.tar.gz, one folder
# rl-nginx-<version>/ holding lib/ (resty/rl.lua, resty/rl/*.lua, and resty/rl/library.lua:
# functions/rl.lua, the Functions library it loads where the module is missing), the examples
# nginx.conf and login.conf, README.md and LICENSE. <version> is resty/rl.lua's _VERSION. Prints the archive's
# path. Reproducible: sorted entries, fixed owner and mode, the last commit's time.
#
#   scripts/pack-nginx.sh OUTDIR
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:?usage: scripts/pack-nginx.sh OUTDIR}
version=$(sed -n 's/^local _M = { _VERSION = "\(.*\)" }$/\1/p' clients/nginx/lib/resty/rl.lua)
[ -n "$version" ] || { echo "pack-nginx: no _VERSION in clients/nginx/lib/resty/rl.lua" >&2; exit 1; }
name=rl-nginx-$version
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/$name/lib/resty/rl" "$out"
cp clients/nginx/lib/resty/rl.lua "$stage/$name/lib/resty/"
cp clients/nginx/lib/resty/rl/*.lua "$stage/$name/lib/resty/rl/"
cp functions/rl.lua "$stage/$name/lib/resty/rl/library.lua"
cp clients/nginx/examples/nginx.conf clients/nginx/examples/login.conf clients/nginx/README.md LICENSE "$stage/$name/"
find "$stage/$name" -type d -exec chmod 0755 {} + && find "$stage/$name" -type f -exec chmod 0644 {} +
mtime=$(git log -1 --format=%cI 2>/dev/null || date -u +%Y-%m-%dT%H:%M:%SZ)
tar --sort=name --owner=0 --group=0 --numeric-owner --mtime="$mtime" -C "$stage" -cf - "$name" |
  gzip -9n >"$out/$name.tar.gz"
echo "$out/$name.tar.gz"
