#!/usr/bin/env bash
# Pipelines that stay full: GETs on ONE connection at pipeline depth 16, kvbench against
# memtier_benchmark (Redis and memcached) and redis-benchmark (Redis), the figures of issue 32's
# "at least memtier's throughput". kvbench refills a connection's pipeline as replies arrive,
# as memtier does; the column tput-x is kvbench's throughput over each peer's (medians).
#
# This is bench/loadgen.sh with one connection and depth 16: its header says how the servers
# are started, what each tool runs and how to build memtier outside the repository.
#
# Usage: bench/pipeline.sh   (ROUNDS=9 DEPTHS=16 RECORDS=100000 OPS=1000000; MEMTIER=..., KVBENCH=...)
set -euo pipefail
cd "$(dirname "$0")/.."
CONNS=1 ROUNDS=${ROUNDS:-9} DEPTHS=${DEPTHS:-16} exec bench/loadgen.sh
