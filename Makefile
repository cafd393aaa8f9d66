# Build, run and test the rl module. `make run` and `make test` install what they
# need where it is missing (see scripts/install-deps.sh).

MODULE := $(CURDIR)/target/release/librl.so
CARGO ?= cargo

.PHONY: all deps deps-run build build-only facts library run cluster cluster-stop test memcheck bench bench-profile bench-library dist check-dist lint clean

all: build

# What building and running need (redis-server, redis-tools, libclang-dev).
deps-run:
	@bash scripts/install-deps.sh run

# What the tests need besides: valkey-server, the Python virtualenv, node-redis.
deps:
	@bash scripts/install-deps.sh test

build-only:
	$(CARGO) build --release

build: deps-run build-only

# The facts every language shares (facts/rl.toml: the kinds, the per-call bounds, the
# duration units, the settings' defaults, the error texts) written into each: src/facts.rs,
# functions/parts/04-facts.lua, clients/python/src/redis_rl/_facts.py, clients/node/src/facts.ts,
# clients/nginx/lib/resty/rl/facts.lua, clients/rust/src/facts.rs.
facts:
	python3 scripts/generate-facts.py

# functions/rl.lua, the Functions library, from its parts (functions/parts/*.lua), the facts'
# part regenerated first.
library:
	bash scripts/build-library.sh

# A Redis on 127.0.0.1:$(PORT) (default 6379) with the module loaded from
# redis.conf.example (its append-only file goes to ./appendonlydir).
PORT ?= 6379
run: build
	redis-server redis.conf.example --port $(PORT)

# A local Redis Cluster with the module: 3 masters and 3 replicas on ports 7000-7005
# (CLUSTER_PORT=8000 moves them), data and logs in ./cluster/<port>/.
cluster: build
	RL_MODULE=$(MODULE) bash scripts/cluster.sh

cluster-stop:
	bash scripts/cluster.sh stop

# Every test (scripts/run-tests.sh): the Rust unit and integration tests against real
# redis-server and valkey-server, then the Python tests and the Python, Node and NGINX
# packages' suites side by side. CONTRIBUTING.md says how to run one suite or one test.
test: deps build
	RL_MODULE=$(MODULE) bash scripts/run-tests.sh

# The wait, lease, sliding-log and flood scenarios on Redis 7.0 under valgrind's memcheck
# (tests/it/memcheck.rs; `make test` runs it too): no invalid read or write, no use of freed memory.
memcheck: deps build
	RL_MODULE=$(MODULE) cargo test --profile harness --features debug-commands --test it memcheck:: -- --ignored

# Side-by-side benchmark (INCR, SET … PXAT, RL.*, the seed articles' Lua scripts, the
# Functions library), with a replica, with an AOF, on Valkey; memory per key, scaling and
# the worst calls. Prints Markdown tables; the side-by-side ones give medians over 5 rounds,
# every row measured once per round; then limits' stock Redis storage next to rl+redis:// per
# strategy (scripts/bench_limits.py; `bench.py --limits-only` runs that alone); last, NGINX
# at the edge: requests per second and Redis time per request with limit_req, a hand-written
# EVALSHA script and resty.rl, driven by wrk (scripts/bench_nginx.py; `--nginx-only`); NGINX
# and the Python and Node middlewares under a flood (scripts/bench_flood.py, `--flood-only`;
# scripts/bench_flood_pkg.py, `--flood-pkg-only`); an axum app with tower_governor,
# tower-redis-cell and the redis-rl tower layer (scripts/bench_rust.py, `--rust-only`). Runs
# under .tools/venv, which has redis-py, limits, FastAPI and uvicorn. Not a test: figures are
# as measured.
bench: deps build
	.tools/venv/bin/python scripts/bench.py --module $(MODULE)

# Instructions per call under callgrind (repeatable on a busy machine): INCR, SET … PXAT
# and every command, with the ratios, and where RL.GCRA's instructions go; then the
# Functions library against the seed scripts on Redis and, once `make deps` has installed
# it, Valkey 9.1.
bench-profile: build
	@bash scripts/install-deps.sh profile
	python3 scripts/profile.py --module $(MODULE) --breakdown --library

# Only the library against the seed scripts (callgrind, Redis and Valkey 9.1): no module
# is built or loaded.
bench-library: deps
	python3 scripts/profile.py --library-only

# Release archives users load without Rust, for x86_64 and aarch64 Linux with glibc 2.17 or
# later: dist/rl-<version>-linux-<arch>.tar.gz and .sha256 (scripts/dist.sh: zig through
# cargo-zigbuild, installed into .tools), and the client packages beside them (the Python
# sdist and wheel, the npm tarball, each with its .sha256), then check-dist.
dist: deps
	bash scripts/dist.sh
	bash scripts/check-dist.sh

# Checks the archives in dist/: checksums, ELF machine, no symbol above GLIBC_2.17, and the
# x86_64 module loaded into Redis 7.0 and Valkey 9.1 answering every command; and the client
# packages, installed as the docs say into fresh environments, deciding through it.
check-dist: deps
	bash scripts/check-dist.sh

# The Rust client crate is linted without its features and with its tower layer
# (`--features tower`: src/tower, the tower tests, examples and bench), as
# scripts/test-rust-package.sh does.
lint:
	$(CARGO) fmt --check
	$(CARGO) clippy --release --all-targets -- -D warnings
	$(CARGO) run -q --release --example zone-table -- --check
	cd clients/rust && $(CARGO) fmt --check && $(CARGO) clippy --locked --all-targets -- -D warnings
	cd clients/rust && $(CARGO) clippy --locked --all-targets --features tower -- -D warnings

clean:
	$(CARGO) clean
	rm -rf .tools appendonlydir dump.rdb cluster dist
