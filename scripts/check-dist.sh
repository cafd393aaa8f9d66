#!/usr/bin/env bash
# Checks the archives scripts/dist.sh made in dist/ (both must exist), and fails loudly on
# the first thing that is wrong. For each of rl-<version>-linux-{x86_64,aarch64}.tar.gz:
#   1. `sha256sum -c` accepts its .sha256 file;
#   2. it unpacks to one folder rl-<version>-linux-<arch>/ holding librl.so (executable),
#      README.md (with
#      the "download the archive" install lines, naming this version) and LICENSE;
#   3. librl.so is a 64-bit shared object for the right machine (`readelf -h`: X86-64 or
#      AArch64) exporting RedisModule_OnLoad;
#   4. `objdump -T` lists GLIBC_x.y symbol versions, and none is above 2.17 (the highest is
#      printed; `readelf -V`'s version needs are checked the same way).
# The client packages (the Python sdist and wheel, the npm tarball) must match their .sha256
# files; docs/python.md's and docs/node.md's `install release` blocks run as written (a fresh
# virtualenv, a fresh npm project), the sdist installs into a virtualenv of its own, and each
# decides one call through the module in both servers. The Rust crate (redis-rl-*.crate) must
# match its .sha256; docs/rust.md's `install release` block adds it to a fresh cargo project as
# written, and an app built against it decides one call through the module in both servers, as
# does an axum app behind its tower layer (the `tower` feature), built in a fresh project too.
# The NGINX package (rl-nginx) must match
# its .sha256; docs/nginx.md's `install release` block unpacks it as written, and NGINX serves
# the example nginx.conf from the unpacked folder, deciding through the module in both servers.
# Then it runs README.md's install steps (its `install release` block) as written beside this
# machine's archive, and loads the librl.so they unpacked into Redis 7.0 (Debian's redis-server) and
# Valkey 9.1 (.tools/bin/valkey-server, from scripts/install-deps.sh test), each on a free
# port, checks MODULE LIST, and runs one call of every command (RL.GCRA, RL.TOKENBUCKET,
# RL.LEAKY, RL.SLIDING, RL.SLIDINGLOG, RL.FIXED, RL.ALL, RL.ACQUIRE, RL.RELEASE,
# CL.THROTTLE) on fresh keys with redis-cli, comparing each reply with the expected one,
# plus a denial and a second release, which only a module that stored its state can give.
# The servers are stopped and the scratch directory removed on exit, whatever happens.
set -euo pipefail
cd "$(dirname "$0")/.."

MAX_GLIBC=2.17
version=$(sed -n '/^\[package\]/,/^\[/ s/^version *= *"\(.*\)"/\1/p' Cargo.toml | head -n1)
scratch=$(mktemp -d)
pids=()
cleanup() {
  local pid
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  rm -rf "$scratch"
}
trap cleanup EXIT

fail() { echo "check-dist: FAILED: $*" >&2; exit 1; }
say() { echo "check-dist: $*"; }

# "2.17" <= "2.17" and "2.3" <= "2.17" by version order.
version_le() { [ "$(printf '%s\n%s\n' "$1" "$2" | sort -V | tail -n1)" = "$2" ]; }

# --- The archives --------------------------------------------------------------------------
declare -A machine=([x86_64]="Advanced Micro Devices X86-64" [aarch64]="AArch64")
for arch in x86_64 aarch64; do
  name=rl-$version-linux-$arch
  archive=dist/$name.tar.gz
  [ -f "$archive" ] || fail "$archive is missing: run scripts/dist.sh (make dist)"
  [ -f "$archive.sha256" ] || fail "$archive.sha256 is missing"
  (cd dist && sha256sum --quiet --strict -c "$name.tar.gz.sha256") || fail "$archive: checksum mismatch"

  tar -xzf "$archive" -C "$scratch"
  top=$(tar -tzf "$archive" | cut -d/ -f1 | sort -u)
  [ "$top" = "$name" ] || fail "$archive: expected one folder $name/, found: $top"
  dir=$scratch/$name
  for f in librl.so README.md LICENSE docs/commands.md docs/operations.md; do
    [ -s "$dir/$f" ] || fail "$archive: $name/$f is missing or empty"
  done
  grep -qi "download the archive" "$dir/README.md" || fail "$archive: README.md lacks the install lines"
  grep -q "v=$version " "$dir/README.md" || fail "$archive: README.md's install lines do not name version $version"
  so=$dir/librl.so
  [ -x "$so" ] || fail "$archive: $name/librl.so is not executable (Redis 7 refuses to load it)"

  header=$(readelf -h "$so") || fail "$so: not an ELF file"
  got_machine=$(sed -n 's/^ *Machine: *//p' <<<"$header")
  [ "$got_machine" = "${machine[$arch]}" ] || fail "$archive: ELF machine is '$got_machine', expected '${machine[$arch]}'"
  grep -q 'Class: *ELF64' <<<"$header" || fail "$archive: not ELF64"
  grep -q 'Type: *DYN' <<<"$header" || fail "$archive: not a shared object"

  # objdump -T reads an AArch64 ELF through binutils' generic elf64-little backend.
  dynsyms=$(objdump -T "$so") || fail "$so: objdump -T failed"
  grep -Eq '[[:space:]]RedisModule_OnLoad$' <<<"$dynsyms" || fail "$archive: RedisModule_OnLoad is not exported"
  glibc=$(grep -o 'GLIBC_[0-9][0-9.]*' <<<"$dynsyms" | sed 's/^GLIBC_//' | sort -uV)
  [ -n "$glibc" ] || fail "$archive: objdump -T lists no GLIBC_ symbol version"
  max=$(tail -n1 <<<"$glibc")
  version_le "$max" "$MAX_GLIBC" || fail "$archive: needs GLIBC_$max (above $MAX_GLIBC): $(grep "GLIBC_$max" <<<"$dynsyms" | head -n5)"
  # The version needs (.gnu.version_r) are what the dynamic loader checks when loading.
  need=$(readelf -V "$so" | grep -o 'GLIBC_[0-9][0-9.]*' | sed 's/^GLIBC_//' | sort -uV | tail -n1)
  if [ -z "$need" ] || ! version_le "$need" "$MAX_GLIBC"; then
    fail "$archive: readelf -V version needs go up to '$need', above GLIBC_$MAX_GLIBC"
  fi
  libs=$(readelf -d "$so" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | tr '\n' ' ')
  say "$archive: sha256 ok, ELF64 ${machine[$arch]}, highest symbol version GLIBC_$max (<= $MAX_GLIBC), needs: $libs"
done

# --- The README's install steps, exactly as written -----------------------------------------
# Its `install release` block, run by bash -e in a folder holding what a user downloads (this
# machine's archive and its .sha256); the module loaded below is the one those steps unpacked.
install=$scratch/install
mkdir "$install"
arch=$(uname -m)
cp "dist/rl-$version-linux-$arch.tar.gz" "dist/rl-$version-linux-$arch.tar.gz.sha256" "$install/"
# The `install release` block of a doc file, run by bash -e in `dir` (made first).
release_steps() {
  local doc=$1 dir=$2 steps
  steps=$(awk '/^<!-- example: install release -->$/ { on = 1; next }
               on && /^```sh$/ { inside = 1; next }
               inside && /^```$/ { exit }
               inside { print }' "$doc")
  [ -n "$steps" ] || fail "$doc has no install release block"
  (cd "$dir" && bash -e -c "$steps") || fail "$doc's install steps failed:"$'\n'"$steps"
}
release_steps README.md "$install"
so=$install/rl-$version-linux-$arch/librl.so
[ -x "$so" ] || fail "README.md's install steps did not unpack rl-$version-linux-$arch/librl.so"
say "README.md's install steps ran in $install"

# --- The client packages, installed as docs/python.md and docs/node.md say ------------------
# Each file's checksum, then each doc's `install release` block run as written beside the
# files it names (a fresh virtualenv; a fresh npm project), and the sdist installed into a
# virtualenv of its own; check_server then calls the module through each.
pyversion=$(sed -n 's/^version *= *"\(.*\)"/\1/p' clients/python/pyproject.toml | head -n1)
nodeversion=$(sed -n 's/^ *"version": *"\(.*\)",*$/\1/p' clients/node/package.json | head -n1)
nginxversion=$(sed -n 's/^local _M = { _VERSION = "\(.*\)" }$/\1/p' clients/nginx/lib/resty/rl.lua)
wheel=redis_rl-$pyversion-py3-none-any.whl sdist=redis_rl-$pyversion.tar.gz tarball=redis-rl-$nodeversion.tgz
edge=rl-nginx-$nginxversion.tar.gz
for f in "$wheel" "$sdist" "$tarball" "$edge"; do
  [ -f "dist/$f" ] && [ -f "dist/$f.sha256" ] || fail "dist/$f or its .sha256 is missing: run scripts/dist.sh"
  (cd dist && sha256sum --quiet --strict -c "$f.sha256") || fail "dist/$f: checksum mismatch"
done
python_app=$scratch/python-app node_app=$scratch/node-app
mkdir "$python_app" "$node_app"
cp "dist/$wheel" "dist/$wheel.sha256" "$python_app/"
release_steps docs/python.md "$python_app"
[ -x "$python_app/.venv/bin/python" ] || fail "docs/python.md's install steps made no .venv"
python3 -m venv "$scratch/sdist-venv"
"$scratch/sdist-venv/bin/pip" install --quiet --disable-pip-version-check "dist/$sdist" ||
  fail "dist/$sdist does not install"
cp "dist/$tarball" "dist/$tarball.sha256" "$node_app/"
(cd "$node_app" && npm init -y >/dev/null && npm install --silent --no-audit --no-fund redis@5) ||
  fail "npm could not make a project with node-redis"
release_steps docs/node.md "$node_app"
[ -f "$node_app/node_modules/redis-rl/package.json" ] || fail "docs/node.md's install steps installed no redis-rl"
nginx_app=$scratch/nginx-app
mkdir "$nginx_app"
cp "dist/$edge" "dist/$edge.sha256" "$nginx_app/"
release_steps docs/nginx.md "$nginx_app"
edge_lib=$nginx_app/rl-nginx-$nginxversion/lib
[ -f "$edge_lib/resty/rl.lua" ] && [ -f "$edge_lib/resty/rl/library.lua" ] ||
  fail "docs/nginx.md's install steps did not unpack rl-nginx-$nginxversion/lib"
say "the packages' install steps ran in $python_app, $node_app and $nginx_app; $sdist installed"

# --- The Rust crate, added to a fresh cargo project as docs/rust.md says ---------------------
# docs/rust.md's `install release` block runs as written in a new project beside the .crate
# (cargo fetches redis and tokio from the registry where its cache lacks them), then the app
# below is built against the unpacked crate; check_server runs it. More Rust apps built against
# the same unpacked crate (an axum app) go in check_rust_apps.
rustversion=$(sed -n 's/^version *= *"\(.*\)"/\1/p' clients/rust/Cargo.toml | head -n1)
crate=redis-rl-$rustversion.crate
[ -f "dist/$crate" ] && [ -f "dist/$crate.sha256" ] || fail "dist/$crate or its .sha256 is missing: run scripts/dist.sh"
(cd dist && sha256sum --quiet --strict -c "$crate.sha256") || fail "dist/$crate: checksum mismatch"
rust_app=$scratch/rust-app
(cd "$scratch" && cargo new --quiet --vcs none --name rl-check rust-app) || fail "cargo new failed"
cp "dist/$crate" "dist/$crate.sha256" "$rust_app/"
release_steps docs/rust.md "$rust_app"
[ -f "$rust_app/redis-rl-$rustversion/rl.lua" ] || fail "docs/rust.md's install steps unpacked no redis-rl-$rustversion"
cat >"$rust_app/src/main.rs" <<'EOF'
// One decision through the packaged crate: allowed, limit, remaining, backend.
#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let client = redis::Client::open(format!("redis://127.0.0.1:{}/", args[1]))?;
    let limiter = redis_rl::Limiter::new(client.get_multiplexed_async_connection().await?);
    let policy = redis_rl::Policy::gcra(10, "1s").burst(5);
    let d = limiter.decide(&args[2], &policy).await?;
    println!("{} {} {} {}", d.allowed, d.limit, d.remaining, d.backend.as_str());
    Ok(())
}
EOF
# Its own target directory (clients/rust/target's builds are of other features).
(cd "$rust_app" && unset CARGO_TARGET_DIR && { cargo build --quiet --offline 2>/dev/null || cargo build --quiet; }) ||
  fail "the app against $crate does not build"
rust_bin=$rust_app/target/debug/rl-check
# An axum app behind the crate's tower layer (its `tower` feature), in a fresh project of its
# own against the same unpacked crate: it serves itself on 127.0.0.1:0, sends itself two
# requests over HTTP from one address against a limit of 1, and prints both statuses and the
# denial's body.
axum_app=$scratch/axum-app
(cd "$scratch" && cargo new --quiet --vcs none --name rl-axum-check axum-app) || fail "cargo new failed"
cat >>"$axum_app/Cargo.toml" <<EOF
redis-rl = { path = "$rust_app/redis-rl-$rustversion", features = ["tower"] }
redis = { version = "1.8", default-features = false, features = ["tokio-comp"] }
tokio = { version = "1", features = ["macros", "rt-multi-thread", "net", "io-util"] }
axum = "0.8"
EOF
cat >"$axum_app/src/main.rs" <<'EOF'
// The tower layer from the packaged crate: two requests, the second denied.
use std::net::SocketAddr;

use axum::{routing::get, Router};
use redis_rl::tower::{Identify, RateLimitLayer, TrustedProxies};
use redis_rl::{Limiter, Policy};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let client = redis::Client::open(format!("redis://127.0.0.1:{}/", args[1]))?;
    let limiter = Limiter::new(client.get_multiplexed_async_connection().await?);
    let layer = RateLimitLayer::builder(limiter)
        .prefix(&args[2])
        .layer("ip", Identify::client_ip(TrustedProxies::none()), Policy::fixed(1, "1h"))
        .build()?;
    let app = Router::new().route("/", get(|| async { "ok" })).layer(layer);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    let app = app.into_make_service_with_connect_info::<SocketAddr>();
    tokio::spawn(async move { axum::serve(listener, app).await });
    let mut said = Vec::new();
    for i in 0..2 {
        let mut s = tokio::net::TcpStream::connect(addr).await?;
        s.write_all(b"GET / HTTP/1.1\r\nHost: check\r\nConnection: close\r\n\r\n").await?;
        let mut reply = String::new();
        s.read_to_string(&mut reply).await?;
        said.push(reply.split(' ').nth(1).unwrap_or("?").to_string());
        if i == 1 {
            said.push(reply.split_once("\r\n\r\n").map_or("", |(_, body)| body).to_string());
        }
    }
    println!("{}", said.join(" "));
    Ok(())
}
EOF
(cd "$axum_app" && unset CARGO_TARGET_DIR && { cargo build --quiet --offline 2>/dev/null || cargo build --quiet; }) ||
  fail "the axum app against $crate (feature tower) does not build"
axum_bin=$axum_app/target/debug/rl-axum-check
# Further Rust apps against the unpacked crate: each built here, run by check_rust_apps.
check_rust_apps() {
  local got
  got=$("$rust_bin" "$port" "d:rust" 2>&1) || true
  [ "$got" = "true 5 4 module" ] || fail "$server_name: redis-rl from $crate answered '$got'"
  got=$("$axum_bin" "$port" "d:axum" 2>&1) || true
  [ "$got" = '200 429 {"error": "rate limited", "layer": "ip"}' ] ||
    fail "$server_name: the axum app's tower layer from $crate answered '$got'"
}
say "docs/rust.md's install steps ran in $rust_app; an app and an axum app against $crate built"

# --- Loading the x86_64 module ---------------------------------------------------------------
valkey=.tools/bin/valkey-server
[ -x "$valkey" ] || valkey=$(command -v valkey-server) ||
  fail "valkey-server is missing: run scripts/install-deps.sh test"
command -v redis-server >/dev/null || fail "redis-server is missing: run scripts/install-deps.sh run"
command -v redis-cli >/dev/null || fail "redis-cli is missing: run scripts/install-deps.sh run"

free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# The reply to one call, one element per line (redis-cli's raw output, nested arrays flattened).
call() { redis-cli -h 127.0.0.1 -p "$port" "$@"; }

# expect "<expected fields>" COMMAND args...: the reply's elements, space-separated, must
# match the expected ones; a `*` matches any one element (a time that depends on the clock).
expect() {
  local want=$1 got w g i
  shift
  got=$(call "$@" 2>&1 | tr '\n' ' ' | sed 's/ $//') || true
  read -ra w <<<"$want"
  read -ra g <<<"$got"
  [ ${#w[@]} -eq ${#g[@]} ] || fail "$server_name: $* replied '$got', expected '$want'"
  for i in "${!w[@]}"; do
    [ "${w[$i]}" = "*" ] || [ "${w[$i]}" = "${g[$i]}" ] || fail "$server_name: $* replied '$got', expected '$want'"
  done
  printf '  %-72s -> %s\n' "$*" "$got"
}

# NGINX serving the unpacked package's example nginx.conf (its ports and package folder
# changed) in front of a static upstream: a request with a known API key is answered with
# the headers of a decision the module made.
check_nginx() {
  local dir=$scratch/nginx-$port up listen conf got i
  mkdir -p "$dir"
  up=$(free_port) listen=$(free_port)
  python3 -m http.server "$up" --bind 127.0.0.1 --directory "$dir" >/dev/null 2>&1 &
  pids+=("$!")
  sed -e "s|/opt/rl-nginx-$nginxversion/lib|$edge_lib|" -e "s|port = 6379|port = $port|" \
    -e "s|127.0.0.1:8080|127.0.0.1:$up|" -e "s|127.0.0.1:8000|127.0.0.1:$listen|" \
    -e "s|worker_processes auto|worker_processes 1|" "$nginx_app/rl-nginx-$nginxversion/nginx.conf" >"$dir/nginx.conf"
  for i in $(seq 100); do
    curl -s -o /dev/null "http://127.0.0.1:$up/" && break
    sleep 0.1
  done
  nginx -p "$dir" -c "$dir/nginx.conf" -g 'daemon off;' 2>"$dir/stderr.log" &
  pids+=("$!")
  for i in $(seq 100); do
    got=$(curl -s -D - -o /dev/null -H 'X-API-Key: free-key' "http://127.0.0.1:$listen/" 2>/dev/null) &&
      grep -q '^HTTP/1.1 200' <<<"$got" && break
    sleep 0.1
  done
  grep -q '^HTTP/1.1 200' <<<"$got" && grep -q '^X-RateLimit-Limit: 20' <<<"$got" &&
    grep -q '^RateLimit-Policy: "ip";q=100;w=1' <<<"$got" ||
    { cat "$dir/stderr.log" "$dir/error.log" >&2 2>/dev/null; fail "$server_name: NGINX with $edge answered: $got"; }
  [ "$(call EXISTS rl:key:free-key)" = 1 ] || fail "$server_name: NGINX with $edge stored no key"
  say "$server_name: NGINX serving $edge's nginx.conf decides through the module"
  kill "${pids[-1]}" "${pids[-2]}" 2>/dev/null || true
}

check_server() {
  server_name=$1
  local bin=$2 log pid i
  port=$(free_port)
  log=$scratch/$server_name.log
  "$bin" --port "$port" --bind 127.0.0.1 --save '' --appendonly no --dir "$scratch" \
    --loadmodule "$so" >"$log" 2>&1 &
  pid=$!
  pids+=("$pid")
  for i in $(seq 100); do
    [ "$(call PING 2>/dev/null)" = PONG ] && break
    kill -0 "$pid" 2>/dev/null || { cat "$log" >&2; fail "$server_name exited while loading $so"; }
    sleep 0.1
  done
  [ "$(call PING 2>/dev/null)" = PONG ] || { cat "$log" >&2; fail "$server_name did not answer on port $port"; }
  server_name="$server_name $(call INFO server | sed -n 's/^\(valkey\|redis\)_version:\(.*\)\r$/\1 \2/p' | tail -n1)"
  call MODULE LIST | grep -qx rl || fail "$server_name: MODULE LIST does not show rl"
  say "$server_name on port $port loaded $so"

  # Fresh keys, so every reply but the window-aligned times is fixed.
  expect "1 5 4 0 100"        RL.GCRA d:gcra 10 1s BURST 5
  expect "1 10 9 0 500"       RL.TOKENBUCKET d:bucket 10 2 1s
  expect "1 20 19 0 200"      RL.LEAKY d:leaky 20 5 1s
  expect "1 100 99 0 *"       RL.SLIDING d:sliding 100 1m
  expect "1 5 4 0 900000"     RL.SLIDINGLOG d:log 5 15m
  expect "1 10000 9999 0 *"   RL.FIXED d:fixed 10000 1d
  expect "1 5 4 0 100  1 5 4 0 100  1 10 9 0 *" \
                              RL.ALL 2 d:all:a d:all:b GCRA 10 1s BURST 5 FIXED 10 1m
  expect "1 3 2 0 30000"      RL.ACQUIRE d:inflight 3 30s lease-1
  expect "1"                  RL.RELEASE d:inflight lease-1
  expect "0 16 15 -1 2"       CL.THROTTLE d:cell 15 30 60
  # State was stored: a second call is denied, a second release finds nothing.
  expect "1 1 0 0 3600000"    RL.GCRA d:gcra:strict 1 1h
  expect "0 1 0 * *"          RL.GCRA d:gcra:strict 1 1h
  expect "0"                  RL.RELEASE d:inflight lease-1
  [ "$(call EXISTS d:gcra:strict)" = 1 ] || fail "$server_name: RL.GCRA stored no key"
  # The client packages, as installed above, call the module.
  local py='import sys, redis, redis_rl
d = redis_rl.Limiter(redis.Redis(port=int(sys.argv[1]))).gcra(sys.argv[2], 10, "1s", burst=5)
print(d.allowed, d.limit, d.remaining, d.backend)'
  local js='import { createClient } from "redis"; import { Limiter } from "redis-rl";
const c = await createClient({ url: `redis://127.0.0.1:${process.argv[1]}` }).connect();
const d = await new Limiter(c).gcra(process.argv[2], 10, "1s", { burst: 5 });
console.log(d.allowed, d.limit, d.remaining, d.backend); await c.close();'
  local got
  for venv in "$python_app/.venv" "$scratch/sdist-venv"; do
    got=$("$venv/bin/python" -c "$py" "$port" "d:py:$venv" 2>&1) || true
    [ "$got" = "True 5 4 module" ] || fail "$server_name: redis_rl from $venv answered '$got'"
  done
  got=$(cd "$node_app" && node --input-type=module -e "$js" "$port" d:node 2>&1) || true
  [ "$got" = "true 5 4 module" ] || fail "$server_name: redis-rl from $tarball answered '$got'"
  check_rust_apps
  say "$server_name: the wheel, the sdist, the npm tarball and the crate each decide through the module"
  check_nginx
  ! grep -qi 'panic\|# Module .* failed' "$log" || { cat "$log" >&2; fail "$server_name logged an error"; }

  call SHUTDOWN NOSAVE >/dev/null 2>&1 || true
  wait "$pid" 2>/dev/null || true
}

check_server redis-server "$(command -v redis-server)"
check_server valkey-server "$valkey"
say "ok: both archives, the client packages, and the x86_64 module in Redis and Valkey"
