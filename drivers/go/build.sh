#!/usr/bin/env bash
# Builds kvbench's Go worker into drivers/go/bin/kvbench-go-worker (kvbench runs `go-*`
# engines with it). Modules come from the Go proxy at the versions pinned in go.mod/go.sum.
# cgo is required: go-tokyocabinet links Debian's libtokyocabinet (libtokyocabinet-dev, which
# `make deps` installs); a worker built without cgo reports that engine as unavailable.
set -euo pipefail
cd "$(dirname "$0")"
command -v go >/dev/null || { echo "go not found: install Go 1.22 or later" >&2; exit 1; }
mkdir -p bin
export CGO_ENABLED=1
go build -trimpath -o bin/kvbench-go-worker ./cmd/kvbench-go-worker
echo "built $(pwd)/bin/kvbench-go-worker"
