#!/usr/bin/env bash
# The Go worker against a minimal Go loop on bbolt (docs/methodology.md): random get over
# RECORDS records of 100 bytes (kvbench's default 16-digit decimal keys), the same derived keys
# and op stream, one timer per get. Both read the file the worker loaded; they run ROUNDS
# times alternately, which one goes first alternating too; the wall-clock ops/s ratios
# (worker / minimal) are printed, median last, with a 95 % interval of that median from
# resampling the rounds (one process's speed here varies by ±10 % from run to run, so a
# median of a few rounds is not enough), and beside them the ratio of ops per CPU second, the
# ratio of the best rounds (the least disturbed) and the load average before and after.
# VERIFY=false runs the worker's gets without checking the values (to show that share);
# MINIMAL_USE=1 makes the minimal loop read every byte of each value after its timed get, as a
# caller using the value would (the worker reads each value to check it).
# CACHEGRIND=1 counts instructions per get instead, under valgrind (bench/instructions.py).
#   drivers/go/bench/run.sh [RECORDS] [COUNT] [ROUNDS]
set -euo pipefail
cd "$(dirname "$0")/.."
RECORDS=${1:-1000000} COUNT=${2:-500000} ROUNDS=${3:-21}
work=$(mktemp -d /var/tmp/kvbench-go-bench.XXXXXX)
trap 'rm -rf "$work"' EXIT
(cd ../.. && cargo build --release -p kvbench-ffi --target-dir target)
# The worker kvbench runs for go-bbolt: linked with bbolt alone (build.sh).
core="-X main.coreBuild=$(sha256sum ../../target/release/libkvbench_ffi.a | cut -c1-16)"
go build -ldflags "$core" -tags kvbench_only,kvbench_bbolt -o "$work/worker" ./cmd/kvbench-go-worker
go build -o "$work/minimal" ./bench/minimal
mkdir "$work/db"
job() { # job FILE load|get: a go-bbolt job over the benchmark's dataset
	local verify=()
	[[ ${VERIFY:-true} == true ]] || verify=(--no-verify)
	python3 ../../bench/overhead_job.py "$@" --engine go-bbolt --dir "$work/db" --records "$RECORDS" \
		--count "$COUNT" --interval-ms "${INTERVAL_MS:-1000}" "${verify[@]}"
}
opsps() { # ops/s of the ops step in a worker's events
	python3 -c 'import json,sys
for l in sys.stdin:
    e = json.loads(l)
    if e.get("step") == "ops":
        assert e["error"] is None and e["mismatches"] == 0 and e["missing"] == 0, e
        cpu = e["usage"]["cpu_user_ns"] + e["usage"]["cpu_sys_ns"]
        print(round(e["ops"] / e["wall_ns"] * 1e9), round(e["ops"] / cpu * 1e9))'
}
job "$work/load.json" load
job "$work/get.json" get
"$work/worker" --job "$work/load.json" 2>/dev/null | opsps >/dev/null
# The load is not synced (sync none): without this the kernel writes it back during the first
# rounds, slowing whichever program runs then.
sync
if [[ -n ${CACHEGRIND:-} ]]; then
	# Progress and intervals come once a second, not once a get: under valgrind's slowdown
	# they would be counted many times over, so they are left out here.
	INTERVAL_MS=3600000 job "$work/get.json" get
	INTERVAL_MS=3600000 COUNT=$((2 * COUNT)) job "$work/get2.json" get
	python3 "$PWD/bench/instructions.py" "$work" "$RECORDS" "$COUNT"
	exit
fi
worker() { "$work/worker" --job "$work/get.json" 2>/dev/null | opsps; }
minimal() {
	"$work/minimal" -db "$work/db/data.bolt" -records "$RECORDS" -count "$COUNT" -use="${MINIMAL_USE:-0}" 2>/dev/null
}
ratios=() cpus=() ws=() ms=()
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
for i in $(seq "$ROUNDS"); do
	if ((i % 2)); then
		read -r w wc < <(worker)
		read -r m mc < <(minimal)
	else
		read -r m mc < <(minimal)
		read -r w wc < <(worker)
	fi
	r=$(python3 -c "print(f'{$w / $m:.3f}')") c=$(python3 -c "print(f'{$wc / $mc:.3f}')")
	echo "round $i: worker $w ops/s, minimal $m ops/s, wall ratio $r; per CPU second $wc vs $mc, ratio $c"
	ratios+=("$r") cpus+=("$c") ws+=("$w") ms+=("$m")
done
median() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
best() { printf '%s\n' "$@" | sort -n | tail -1; }
echo "median wall-clock ratio $(median "${ratios[@]}"), median CPU ratio $(median "${cpus[@]}")"
python3 - "${ratios[@]}" <<'PY'
import random, statistics, sys
r = [float(x) for x in sys.argv[1:]]
rng = random.Random(1)
boot = sorted(statistics.median(rng.choices(r, k=len(r))) for _ in range(2000))
print(f"95 % interval of the median wall-clock ratio: {boot[49]:.3f} .. {boot[1949]:.3f} (rounds resampled)")
PY
echo "best rounds: worker $(best "${ws[@]}") ops/s, minimal $(best "${ms[@]}") ops/s," \
	"ratio $(python3 -c "print(f'{$(best "${ws[@]}") / $(best "${ms[@]}"):.3f}')")"
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
