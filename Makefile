# Build, run and test the rl module. `make run` and `make test` install what they
# need where it is missing (see scripts/install-deps.sh).

MODULE := $(CURDIR)/target/release/librl.so
CARGO ?= cargo

.PHONY: all deps build run test lint clean

all: build

deps:
	@bash scripts/install-deps.sh

build: deps
	$(CARGO) build --release

# A Redis on 127.0.0.1:6379 with the module loaded from redis.conf.example
# (its append-only file goes to ./appendonlydir).
run: build
	redis-server redis.conf.example

# Unit tests, then the integration suite against real redis-server and valkey-server.
test: build
	RL_MODULE=$(MODULE) bash scripts/run-tests.sh

lint:
	$(CARGO) fmt --check
	$(CARGO) clippy --release --all-targets -- -D warnings

clean:
	$(CARGO) clean
	rm -rf .tools appendonlydir dump.rdb
