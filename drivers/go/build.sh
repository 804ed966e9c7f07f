#!/usr/bin/env bash
# Builds kvbench's Go worker into drivers/go/bin/kvbench-go-worker (kvbench runs `go-*`
# engines with it). Modules come from the Go proxy at the versions pinned in go.mod/go.sum.
set -euo pipefail
cd "$(dirname "$0")"
command -v go >/dev/null || { echo "go not found: install Go 1.22 or later" >&2; exit 1; }
mkdir -p bin
go build -trimpath -o bin/kvbench-go-worker ./cmd/kvbench-go-worker
echo "built $(pwd)/bin/kvbench-go-worker"
