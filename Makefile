# kvbench: `make run` builds everything and runs the default comparison of the embedded
# engines; `make test` runs every test. Both install the Debian packages they need first.

SHELL := /bin/bash
CARGO ?= cargo
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
# Debian's Go from bookworm-backports (scripts/install-go.sh) lives here; a Go already on PATH
# comes first.
export PATH := $(PATH):/usr/lib/go-1.23/bin

# Engines' libraries and servers, plus what the builds need (libclang for rocksdb's bindgen).
APT_PACKAGES := build-essential pkg-config libclang-dev \
	liblmdb-dev librocksdb-dev rocksdb-tools libleveldb-dev libsqlite3-dev \
	libtokyocabinet-dev libkyotocabinet-dev libqdbm-dev libcdb-dev libgdbm-dev libdb-dev libtkrzw-dev libwiredtiger-dev \
	memcached redis-server libmemcached-tools postgresql libpq-dev etcd-server openssh-server \
	python3-venv python3-dev maven \
	chromium

.PHONY: all deps rust build python go java node install run test test-rust test-python test-go test-java test-node lint clean

all: build

deps:
	@missing=$$(for p in $(APT_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || echo $$p; done); \
	if [ -n "$$missing" ]; then \
		echo "installing: $$missing"; \
		$(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq $$missing; \
	fi

rust:
	@command -v $(CARGO) >/dev/null || { \
		echo "cargo not found: installing Rust with rustup"; \
		curl --proto '=https' --tlsv1.2 -sSf https://sh.rustup.rs | sh -s -- -y --profile minimal; }

# KVBENCH_CORE_BUILD (set by run and install): the same cargo selection as the workers' set-ups,
# so whichever takes cargo's lock first builds it all and the others find it built.
build: deps rust
	$(CARGO) build --release $${KVBENCH_CORE_BUILD:-}

python: deps rust
	drivers/python/setup.sh

# The Go worker (engines named go-*): drivers/go/bin/kvbench-go-worker, modules pinned in go.sum,
# built with cgo (go-tokyocabinet links libtokyocabinet from deps). Without a Go on PATH,
# scripts/install-go.sh installs Debian's golang-1.23-go from bookworm-backports.
go: deps rust
	scripts/install-go.sh
	drivers/go/build.sh

# The Java worker (engines named java-*): drivers/java/bin/kvbench-java-worker, Maven artifacts
# pinned in drivers/java/pom.xml, built and run on Temurin 25 (/usr/lib/jvm/temurin-25-jdk-amd64:
# the FFM API links the worker core, libkvbench_ffi.so).
java: deps rust
	drivers/java/build.sh

# The Node.js worker (engines named node-*): drivers/node/bin/kvbench-node-worker over the worker
# core's Node-API addon (crates/kvbench-node), npm packages pinned in package-lock.json (npm ci
# once; better-sqlite3 compiles from source where its prebuilt binary cannot be downloaded).
node: deps rust
	drivers/node/build.sh

# kvbench, the Go workers and the Python worker's own venv under PREFIX (scripts/install.sh,
# docs/install.md): PREFIX/bin/kvbench runs from any directory with every runtime.
PREFIX ?= /usr/local
install: deps rust
	KVBENCH_CORE_BUILD=--workspace $(MAKE) --no-print-directory -j5 build python go java node
	scripts/install.sh $(PREFIX)

# The release build, the Python venv's downloads, the Go modules' (and Go's compile), the Maven
# artifacts' (and the jar's compile) and npm's downloads (and better-sqlite3's compile) overlap
# (-j5: all five at once; with -j3 npm's started only when two others had ended); the Go, Python,
# Java and Node workers then wait for the worker core, which is the workspace's release build
# (KVBENCH_CORE_BUILD: no second build of the core). The workspace's libraries and kvbench only:
# the other binary, kvbench-ffi's abi-header (a developer's tool that rewrites kvbench.h), was a
# thin-LTO link of its own (docs/methodology.md, "Set-up time").
run: deps rust
	KVBENCH_CORE_BUILD="--workspace --lib --bin kvbench" $(MAKE) --no-print-directory -j5 build python go java node
	./target/release/kvbench run

test: deps rust python go java node test-rust test-python test-go test-java test-node

# The HTML report test renders the page in headless Chromium (installed by deps) and prints
# where its screenshot went.
test-rust:
	KVBENCH_REQUIRE_CHROMIUM=1 KVBENCH_SCREENSHOT_DIR=$(CURDIR)/target/html-test $(CARGO) test --workspace
	@echo "HTML report screenshot: $(CURDIR)/target/html-test/report.png"

test-python:
	drivers/python/.venv/bin/python -m pytest -q drivers/python/tests

test-go:
	cd drivers/go && go test -ldflags "-X main.coreBuild=$$(sha256sum ../../target/release/libkvbench_ffi.a | cut -c1-16)" ./...

# Maven Surefire: every Java engine's conformance and the every-step job through the worker core.
test-java:
	cd drivers/java && JAVA_HOME=$${KVBENCH_JAVA_HOME:-/usr/lib/jvm/temurin-25-jdk-amd64} mvn -B -ntp test

# node's test runner: every Node engine's conformance and the every-step job through the worker
# (an engine that does not load fails here instead of being skipped).
test-node:
	cd drivers/node && KVBENCH_NODE_REQUIRE_ENGINES=1 node --test test/

lint:
	$(CARGO) fmt --all -- --check
	# The engine modules are declared by a generated include!, which cargo fmt does not follow.
	rustfmt --edition 2021 --check crates/kvbench-engines/src/*.rs
	$(CARGO) clippy --workspace --all-targets -- -D warnings
	drivers/python/.venv/bin/ruff check drivers/python
	cd drivers/go && go vet ./...
	@out=$$(gofmt -l drivers/go); if [ -n "$$out" ]; then echo "gofmt -l: $$out"; exit 1; fi
	for f in drivers/node/bin/* drivers/node/lib/*.js drivers/node/lib/engines/*.js drivers/node/test/*.js drivers/node/bench/*.js; do node --check $$f || exit 1; done

clean:
	$(CARGO) clean
	rm -rf .kvbench drivers/python/.venv drivers/go/bin drivers/java/target drivers/node/node_modules
