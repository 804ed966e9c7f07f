#!/usr/bin/env bash
# Builds kvbench's Go worker into drivers/go/bin/kvbench-go-worker (kvbench runs `go-*`
# engines with it). Modules come from the Go proxy at the versions pinned in go.mod/go.sum.
# The worker links kvbench's worker core, crates/kvbench-ffi, as a static library: it is built
# first, into the repository's target/release (where internal/worker's cgo flags look for it).
# cgo is required: for the core, and go-tokyocabinet links Debian's libtokyocabinet
# (libtokyocabinet-dev, which `make deps` installs).
set -euo pipefail
cd "$(dirname "$0")"
command -v go >/dev/null || { echo "go not found: install Go 1.22 or later" >&2; exit 1; }
command -v cargo >/dev/null || { echo "cargo not found: install Rust (make rust)" >&2; exit 1; }
(cd ../.. && cargo build --release -p kvbench-ffi --target-dir target)
mkdir -p bin
export CGO_ENABLED=1
go build -trimpath -o bin/kvbench-go-worker ./cmd/kvbench-go-worker
echo "built $(pwd)/bin/kvbench-go-worker"
