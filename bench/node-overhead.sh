#!/usr/bin/env bash
# The Node worker against a plain JavaScript loop on the same engine (docs/methodology.md,
# "The Node worker's overhead"): random gets on node-lmdb (lmdb-js) over RECORDS records of 100
# bytes with kvbench's default 16-digit decimal keys, both reading the environment the worker
# loaded, read-only. The worker runs a job of COUNT uniform gets, every one timed and verified
# by the core; the loop (drivers/node/bench/plain-loop.js) times each get and touches the value.
# farm-bench alternates them (A B A B ...) RUNS times and gives the wall-time ratio pair by
# pair: worker / loop; the worker's speed relative to the loop is its inverse. Whole processes:
# Node's start-up, opening the environment and (worker) the timer calibration and the plan
# are inside both figures, as they are inside any run. Each run's own in-loop ops/s (the worker's
# ops step, the loop's own count) are kept too, and their ratio is printed pair by pair with
# the median. NO_BUILD=1 skips drivers/node/build.sh.
#   bench/node-overhead.sh [RECORDS] [COUNT] [RUNS]
set -euo pipefail
cd "$(dirname "$0")/.."
RECORDS=${1:-200000} COUNT=${2:-2000000} RUNS=${3:-10}
work=$(mktemp -d /var/tmp/kvbench-node-bench.XXXXXX)
trap 'rm -rf "$work"' EXIT
[[ -n ${NO_BUILD:-} ]] || drivers/node/build.sh
mkdir "$work/db"
job() { # job FILE load|get: a node-lmdb job over the benchmark's dataset
	python3 bench/overhead_job.py "$@" --engine node-lmdb --dir "$work/db" --records "$RECORDS" --count "$COUNT" \
		--options '{"map_size": null, "read": null}'
}
check() { # the ops step of a worker's events: no error, every read right; prints its ops/s
	python3 -c 'import json,sys
for l in sys.stdin:
    e = json.loads(l)
    if e.get("step") == "ops":
        assert e["error"] is None and e["mismatches"] == 0 and e["missing"] == 0, e
        print(round(e["ops"] / e["wall_ns"] * 1e9))'
}
job "$work/load.json" load
job "$work/get.json" get
drivers/node/bin/kvbench-node-worker --job "$work/load.json" 2>/dev/null | check >/dev/null
sync
echo "worker ops/s (ops step only): $(drivers/node/bin/kvbench-node-worker --job "$work/get.json" 2>/dev/null | check)"
echo "plain loop: $(node drivers/node/bench/plain-loop.js "$work/db/lmdb" "$RECORDS" "$COUNT")"
worker="$PWD/drivers/node/bin/kvbench-node-worker" loop="$PWD/drivers/node/bench/plain-loop.js"
farm-bench -n "$RUNS" --timeout 900 \
	--vs "sh -c 'exec node $loop $work/db/lmdb $RECORDS $COUNT >>$work/b.jsonl 2>/dev/null'" \
	-- sh -c "exec $worker --job $work/get.json >>$work/a.jsonl 2>/dev/null"
# In-loop ops/s, pair by pair (the first of each is farm-bench's warm-up run).
python3 - "$work/a.jsonl" "$work/b.jsonl" <<'PY'
import json, statistics, sys
a = [round(e["ops"] / e["wall_ns"] * 1e9) for e in map(json.loads, open(sys.argv[1])) if e.get("step") == "ops"][1:]
b = [json.loads(l)["ops_per_sec"] for l in open(sys.argv[2])][1:]
r = [x / y for x, y in zip(a, b)]
print("in-loop ops/s worker / loop, pair by pair:", " ".join(f"{x:.3f}" for x in r))
print(f"median {statistics.median(r):.3f} (worker {statistics.median(a)}, loop {statistics.median(b)} ops/s)")
PY
