#!/usr/bin/env bash
# The Java worker against a minimal loop on the same engine (docs/methodology.md, "The Java
# worker's overhead"): random gets on java-lmdb (lmdbjava 0.9.1) over RECORDS records of 100
# bytes with kvbench's default 16-digit decimal keys, both reading, read-only, the environment
# the worker loaded. The worker runs a job of COUNT uniform gets, every one timed and verified
# by the core, after its untimed warm-up (on a scratch store, until the JIT settles); the minimal loop
# (drivers/java/bench, LmdbGet) runs under JMH 1.37 in one JVM (-f 0): one untimed pass of the
# same COUNT keys, then one timed pass, each get timed and its time stored, each value read
# whole. Both on Temurin 25 with the same JVM options.
# farm-bench alternates them (A B A B ...) RUNS times; each run prints its own ops/s (the
# worker: its ops step; JMH: COUNT over the timed pass), kept in files, and the ratio worker /
# minimal is taken pair by pair, median last, beside the ratio of gets per CPU second (the
# worker: its step's process CPU; the minimal loop: the process's CPU over the timed pass),
# which a loaded machine disturbs less. farm-bench's own wall-time ratio covers whole
# processes (JVM start-up, the worker's warm-up and plan, JMH's key list and untimed pass).
#   bench/java-overhead.sh [RECORDS] [COUNT] [RUNS]
set -euo pipefail
cd "$(dirname "$0")/.."
RECORDS=${1:-200000} COUNT=${2:-2000000} RUNS=${3:-10}
work=$(mktemp -d /var/tmp/kvbench-java-bench.XXXXXX)
trap 'rm -rf "$work"' EXIT
java=/usr/lib/jvm/temurin-25-jdk-amd64/bin/java
# NO_BUILD=1: run what drivers/java/build.sh and the bench module last built.
if [[ -z ${NO_BUILD:-} ]]; then
	drivers/java/build.sh
	(cd drivers/java/bench && JAVA_HOME=${java%/bin/java} mvn -B -q -ntp package)
fi
mkdir "$work/db"
job() { # job FILE load|get: a java-lmdb job over the benchmark's dataset
	python3 bench/overhead_job.py "$@" --engine java-lmdb --dir "$work/db" --records "$RECORDS" --count "$COUNT" \
		--options '{"map_size": null, "no_readahead": true, "write_map": false}'
}
job "$work/load.json" load
job "$work/get.json" get
drivers/java/bin/kvbench-java-worker --job "$work/load.json" >"$work/load.out" 2>/dev/null
sync
cat >"$work/minimal.sh" <<SH
#!/bin/sh
exec $java --enable-native-access=ALL-UNNAMED --sun-misc-unsafe-memory-access=allow \
    --add-opens java.base/java.nio=ALL-UNNAMED --add-opens java.base/sun.nio.ch=ALL-UNNAMED \
    -cp "$PWD/drivers/java/bench/target/classes:$PWD/drivers/java/bench/target/lib/*" org.openjdk.jmh.Main LmdbGet \
    -f 0 -wi 1 -i 1 -p db=$work/db/data.mdb -p records=$RECORDS -p count=$COUNT >>$work/minimal.out 2>&1
SH
cat >"$work/worker.sh" <<SH
#!/bin/sh
exec $PWD/drivers/java/bin/kvbench-java-worker --job $work/get.json >>$work/worker.out 2>/dev/null
SH
chmod +x "$work/minimal.sh" "$work/worker.sh"
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
farm-bench -n "$RUNS" --timeout 3600 --vs "$work/minimal.sh" -- "$work/worker.sh"
python3 - "$work" "$COUNT" <<'PY'
import json, re, statistics, sys
work, count = sys.argv[1], int(sys.argv[2])
w, wc = [], []
for l in open(f"{work}/worker.out"):
    if l.startswith("{"):
        e = json.loads(l)
        if e.get("step") == "ops":
            assert e["error"] is None and e["errors"] == 0 and e["mismatches"] == 0 and e["missing"] == 0, e
            w.append(e["ops"] / e["wall_ns"] * 1e9)
            wc.append(e["ops"] / (e["usage"]["cpu_user_ns"] + e["usage"]["cpu_sys_ns"]) * 1e9)
text = open(f"{work}/minimal.out").read()
m = [count / (float(x.replace(",", "")) / 1e9) for x in re.findall(r"^Iteration\s+1: (?:pass cpu_ns \d+\n)?([\d.,]+) ns/op", text, re.M)]
# Each run prints its warm-up pass's CPU, then its timed pass's.
mc = [count / (int(x) / 1e9) for x in re.findall(r"pass cpu_ns (\d+)", text)][1::2]
w, wc, m, mc = w[1:], wc[1:], m[1:], mc[1:]  # farm-bench's warm-up run of each came first
r = [a / b for a, b in zip(w, m)]
rc = [a / b for a, b in zip(wc, mc)]
for i, (a, b, x, y) in enumerate(zip(w, m, r, rc)):
    print(f"pair {i + 1}: worker {a:,.0f} ops/s, minimal {b:,.0f} ops/s, ratio {x:.3f}; per CPU second ratio {y:.3f}")
print(f"median ratio worker / minimal: {statistics.median(r):.3f} (ops/s of the get loop), "
      f"{statistics.median(rc):.3f} (gets per CPU second), over {len(r)} pairs")
PY
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
