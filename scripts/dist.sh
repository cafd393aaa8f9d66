#!/usr/bin/env bash
# Builds the release archives users load without Rust, and the client packages:
#
#   dist/rl-<version>-linux-x86_64.tar.gz   (+ .sha256)
#   dist/rl-<version>-linux-aarch64.tar.gz  (+ .sha256)
#   dist/redis_rl-<pyversion>.tar.gz and dist/redis_rl-<pyversion>-py3-none-any.whl (+ .sha256):
#     the Python package's sdist, and its wheel built from that sdist (as pip builds one)
#   dist/redis-rl-<nodeversion>.tgz (+ .sha256): the Node package, as `npm pack` makes it
#   dist/rl-nginx-<nginxversion>.tar.gz (+ .sha256): the NGINX package (scripts/pack-nginx.sh)
#   dist/redis-rl-<rustversion>.crate (+ .sha256): the Rust client crate (clients/rust), as
#     `cargo package` makes it (and builds it from the packed files), with the Functions
#     library copied in as rl.lua
#
# <version> is Cargo.toml's. Each archive holds one folder, rl-<version>-linux-<arch>/, with
# librl.so, README.md (its install section: download, verify, loadmodule), docs/ and LICENSE. Each
# .sha256 file is in `sha256sum` format, so `sha256sum -c <archive>.sha256` verifies it.
#
# The module is linked against glibc 2.17's symbol versions (cargo-zigbuild's
# `<triple>.2.17` targets: zig links against stubs of that glibc release), so it loads on any
# Linux with glibc 2.17 or later (CentOS 7, Debian 8, Ubuntu 14.04 and everything since).
# scripts/check-dist.sh verifies that (ELF machine, highest GLIBC_x.y symbol version) and
# loads the x86_64 module into Redis and Valkey; `make dist` runs both scripts.
#
# Installs what is missing, all under .tools/ except the Debian packages and the Rust target:
#   - redis-server, redis-tools, libclang-dev (scripts/install-deps.sh run; bindgen, run by the
#     redis-module crate's build script, loads libclang);
#   - the aarch64-unknown-linux-gnu Rust target (rustup target add);
#   - zig and cargo-zigbuild, from the `ziglang` and `cargo-zigbuild` wheels on PyPI, in the
#     virtualenv .tools/zig-venv (cargo-zigbuild falls back to `cargo install --locked`).
# Builds in target/dist/<triple>/release, so target/release/librl.so (`make build`) is untouched.
set -euo pipefail
cd "$(dirname "$0")/.."

# Pinned so that a release is rebuilt with the same tools. cargo-zigbuild 0.24.1 needs
# Rust 1.88 or later and knows zig 0.17's flags.
ZIGLANG_VERSION=0.17.1
CARGO_ZIGBUILD_VERSION=0.24.1
GLIBC=2.17
# Rust target triple -> the architecture name in the archive's name.
TRIPLES=(x86_64-unknown-linux-gnu aarch64-unknown-linux-gnu)
arch_of() { echo "${1%%-*}"; }

root=$PWD
version=$(sed -n '/^\[package\]/,/^\[/ s/^version *= *"\(.*\)"/\1/p' Cargo.toml | head -n1)
[ -n "$version" ] || { echo "dist: no version in Cargo.toml" >&2; exit 1; }

# --- Tools -------------------------------------------------------------------------------
bash scripts/install-deps.sh run

installed_targets=$(rustup target list --installed)
for triple in "${TRIPLES[@]}"; do
  grep -qx "$triple" <<<"$installed_targets" || rustup target add "$triple"
done

# zig and cargo-zigbuild, both as wheels from PyPI (cargo-zigbuild's holds its prebuilt
# binary), in one virtualenv; without a wheel for this machine, cargo-zigbuild is compiled
# with `cargo install --locked` into .tools/bin instead (a few minutes, once).
venv=.tools/zig-venv
zigbuild=$venv/bin/cargo-zigbuild
[ -x "$zigbuild" ] || zigbuild=.tools/bin/cargo-zigbuild
if [ "$("$venv/bin/python" -m ziglang version 2>/dev/null)" != "$ZIGLANG_VERSION" ] ||
  ! "$zigbuild" --version 2>/dev/null | grep -qw "$CARGO_ZIGBUILD_VERSION"; then
  echo "dist: installing zig $ZIGLANG_VERSION and cargo-zigbuild $CARGO_ZIGBUILD_VERSION from PyPI into $venv"
  rm -rf "$venv"
  if ! python3 -m venv "$venv" 2>/dev/null; then
    rm -rf "$venv"
    # Debian's python3 makes virtualenvs only with python3-venv.
    sudo=""
    [ "$(id -u)" -eq 0 ] || sudo=sudo
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq python3-venv >/dev/null
    python3 -m venv "$venv"
  fi
  pip=("$venv/bin/python" -m pip install --quiet --disable-pip-version-check)
  "${pip[@]}" "ziglang==$ZIGLANG_VERSION"
  if "${pip[@]}" --only-binary=:all: "cargo-zigbuild==$CARGO_ZIGBUILD_VERSION"; then
    zigbuild=$venv/bin/cargo-zigbuild
  else
    echo "dist: no cargo-zigbuild wheel for this machine; cargo install into .tools/bin"
    cargo install --quiet --locked --force cargo-zigbuild --version "$CARGO_ZIGBUILD_VERSION" --root .tools
    zigbuild=.tools/bin/cargo-zigbuild
  fi
fi
"$zigbuild" --version | grep -qw "$CARGO_ZIGBUILD_VERSION" || { echo "dist: $zigbuild is not cargo-zigbuild $CARGO_ZIGBUILD_VERSION" >&2; exit 1; }

# --- Build -------------------------------------------------------------------------------
# cargo-zigbuild runs `python -m ziglang` for zig, and sets the C compiler, the linker and
# bindgen's clang arguments (zig's headers for the target's glibc) for each target.
export CARGO_ZIGBUILD_PYTHON_PATH="$root/$venv/bin/python"
zigbuild=$root/$zigbuild
target_dir=target/dist
build_args=(--release --locked --manifest-path "$root/Cargo.toml" --target-dir "$root/$target_dir")
for triple in "${TRIPLES[@]}"; do build_args+=(--target "$triple.$GLIBC"); done
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
# Run from a directory that does not contain .tools: zig prints its include directories
# relative to the working directory when they are below it, cargo-zigbuild hands them to
# bindgen as they are, and the redis-module build script, which runs in its own directory,
# then cannot find <sys/types.h>.
echo "dist: cargo zigbuild ${build_args[*]}"
(cd "$stage" && "$zigbuild" zigbuild "${build_args[@]}")

# --- Package -----------------------------------------------------------------------------
# Reproducible archives: sorted entries, fixed owner and mode, the last commit's time.
mtime=$(git log -1 --format=%cI 2>/dev/null || date -u +%Y-%m-%dT%H:%M:%SZ)
mkdir -p dist
for triple in "${TRIPLES[@]}"; do
  name=rl-$version-linux-$(arch_of "$triple")
  so=$target_dir/$triple/release/librl.so
  [ -f "$so" ] || { echo "dist: $so was not built" >&2; exit 1; }
  mkdir -p "$stage/$name"
  cp "$so" README.md LICENSE "$stage/$name/"
  # The README links into docs/: the archive carries them.
  cp -r docs "$stage/$name/docs"
  # Redis 7 refuses to load a module file without execute permission.
  chmod 0644 "$stage/$name/README.md" "$stage/$name/LICENSE" "$stage/$name"/docs/*.md
  chmod 0755 "$stage/$name/docs"
  chmod 0755 "$stage/$name/librl.so"
  tar --sort=name --owner=0 --group=0 --numeric-owner --mtime="$mtime" \
    -C "$stage" -cf - "$name" | gzip -9n >"dist/$name.tar.gz"
  (cd dist && sha256sum "$name.tar.gz" >"$name.tar.gz.sha256")
  echo "dist: dist/$name.tar.gz ($(du -h "dist/$name.tar.gz" | cut -f1)), sha256 $(cut -d' ' -f1 "dist/$name.tar.gz.sha256")"
done

# --- The client packages ---------------------------------------------------------------------
# Each with a .sha256 beside it; scripts/check-dist.sh installs each into a fresh environment.
rm -f dist/redis_rl-* dist/redis-rl-* dist/rl-nginx-*
.tools/venv/bin/python -m build --outdir dist clients/python >"$stage/build.log" 2>&1 || {
  cat "$stage/build.log" >&2
  exit 1
}
(cd clients/node && npm ci --silent --no-audit --no-fund &&
  npm pack --silent --pack-destination "$root/dist" >"$stage/pack.log")
bash scripts/pack-nginx.sh dist >/dev/null
# The crate carries the library it loads (build.rs reads clients/rust/rl.lua where it is, which
# only the packed crate has); --allow-dirty for that copy, which is not committed.
cp functions/rl.lua clients/rust/rl.lua
trap 'rm -rf "$stage" "$root/clients/rust/rl.lua"' EXIT
(cd clients/rust && cargo package --locked --allow-dirty --quiet)
crate_dir=$(cd clients/rust && cargo metadata --format-version 1 --no-deps --locked |
  python3 -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])')/package
rustversion=$(sed -n 's/^version *= *"\(.*\)"/\1/p' clients/rust/Cargo.toml | head -n1)
packed=$(tar -tzf "$crate_dir/redis-rl-$rustversion.crate")
grep -qx "redis-rl-$rustversion/rl.lua" <<<"$packed" ||
  { echo "dist: the crate carries no rl.lua" >&2; exit 1; }
cp "$crate_dir/redis-rl-$rustversion.crate" dist/
rm -f clients/rust/rl.lua
for f in dist/redis_rl-*.tar.gz dist/redis_rl-*.whl dist/redis-rl-*.tgz dist/rl-nginx-*.tar.gz dist/redis-rl-*.crate; do
  [ -f "$f" ] || { echo "dist: $f was not built" >&2; exit 1; }
  (cd dist && sha256sum "${f#dist/}" >"${f#dist/}.sha256")
  echo "dist: $f ($(du -h "$f" | cut -f1)), sha256 $(cut -d' ' -f1 "$f.sha256")"
done
