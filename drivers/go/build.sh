#!/usr/bin/env bash
# Builds kvbench's Go worker into drivers/go/bin/kvbench-go-worker (every Go engine; it answers
# kvbench's --list) and one worker per engine into drivers/go/bin/engines/ (kvbench runs `go-*`
# engines with them). Modules come from the Go proxy at the versions pinned in go.mod/go.sum.
# The worker links kvbench's worker core, crates/kvbench-ffi, as a static library: it is built
# before the links, into the repository's target/release (where internal/worker's cgo flags
# look for it).
# cgo is required: for the core, and go-tokyocabinet links Debian's libtokyocabinet
# (libtokyocabinet-dev, which `make deps` installs).
set -euo pipefail
cd "$(dirname "$0")"
command -v go >/dev/null || { echo "go not found: install Go 1.22 or later" >&2; exit 1; }
command -v cargo >/dev/null || { echo "cargo not found: install Rust (make rust)" >&2; exit 1; }
# The modules first: beside a release build (make run's -j5) their download costs no wall time.
go mod download
export CGO_ENABLED=1
# An engine's file carries the tag kvbench_NAME.
mapfile -t engines < <(grep -ho 'kvbench_only || kvbench_[a-z0-9]*' internal/engines/*.go | sed 's/.*kvbench_//' | sort -u)
# Then every package of every worker is compiled (into Go's build cache) before the core is
# waited for: cgo needs the core's library only to link the programs, so under `make run` the
# compile overlaps the release build and only the links follow it.
go build -trimpath ./internal/...
for e in "${engines[@]}"; do go build -trimpath -tags "kvbench_only,kvbench_$e" ./internal/...; done
# KVBENCH_CORE_BUILD: which cargo build makes it (`make run` and `make install` name the workspace,
# the release build they make anyway: building one package alone unifies its dependencies'
# features apart from the workspace's, so cargo would compile them a second time).
# shellcheck disable=SC2086
(cd ../.. && cargo build --release ${KVBENCH_CORE_BUILD:--p kvbench-ffi} --target-dir target)
mkdir -p bin
# Go's build cache does not look inside the core's library: its hash, set as a variable,
# makes Go link the workers again whenever the core changed.
ldflags="-X main.coreBuild=$(sha256sum ../../target/release/libkvbench_ffi.a | cut -c1-16)"
go build -trimpath -ldflags "$ldflags" -o bin/kvbench-go-worker ./cmd/kvbench-go-worker
echo "built $(pwd)/bin/kvbench-go-worker"
# kvbench runs go-NAME with bin/engines/go-NAME, a worker linking that engine alone, as a
# program using the library would (internal/engines/registry.go says why); the full worker
# answers --list.
mkdir -p bin/engines
# Two links at a time: the packages they share are compiled once, in Go's build cache.
printf '%s\n' "${engines[@]}" |
	xargs -P 2 -I{} go build -trimpath -ldflags "$ldflags" -tags "kvbench_only,kvbench_{}" -o "bin/engines/go-{}" ./cmd/kvbench-go-worker
echo "built $(pwd)/bin/engines/: $(ls bin/engines | tr '\n' ' ')"
