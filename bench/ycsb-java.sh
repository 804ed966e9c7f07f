#!/usr/bin/env bash
# YCSB's own Client beside kvbench's Java worker, on the same engine code: java-lmdb (lmdbjava,
# the version drivers/java/pom.xml pins), YCSB core workloads C and A, RECORDS records of 10
# fields of 100 bytes (YCSB's default record, as the ycsb scenarios), OPS zipfian operations,
# 1 and 2 client threads, no fsync at commit on every side. Three harnesses, alternated round by
# round (odd rounds YCSB first, even rounds YCSB last):
#   ycsb     YCSB 0.17.0's site.ycsb.Client (Maven's site.ycsb:core, the jar in the worker's
#            target/lib) driving kvbench.ycsb.KvbenchBinding with kvbench.engine=java-lmdb;
#   binding  kvbench running the same binding by name (engine ycsb:kvbench.ycsb.KvbenchBinding):
#            the same DB calls, planned, timed and verified by kvbench's worker core;
#   kvbench  kvbench's Java worker on its java-lmdb engine directly (no YCSB binding between).
# Besides the medians, each cell has the median of its rounds' binding/ycsb ratios with a 95 %
# bootstrap interval: this machine has spells of minutes in which the same work takes more CPU
# time (more task-clock, the same context switches), and a round's runs share its spell.
# Each harness starts after a sync, so that none runs while the kernel writes back the store
# the one before it left. Throughput is operations over the run phase's wall clock on every
# side (YCSB's [OVERALL] Throughput, kvbench's run phase). kvbench checks every value it reads
# against the plan (the core's verification; a wrong or missing one fails this script), YCSB
# checks none (dataintegrity=false, its default). kvbench's worker runs an untimed JIT warm-up
# (until the JIT settles) before its first step (drivers/java/README.md); YCSB's Client has
# none: its run phase starts in a fresh JVM after the load, so the JIT compiles during it.
# farm-bench cannot pair them: a YCSB round is two processes (load, then run) against one.
#
# Usage: bench/ycsb-java.sh    (ROUNDS=3 THREADS="1 2" WORKLOADS="c a" RECORDS=100000 OPS=500000)
#   KVBENCH=/path/to/kvbench    (default target/release/kvbench; ycsb: rows need one that has them)
# Needs the Java worker (drivers/java/build.sh) and Temurin 25 ($KVBENCH_JAVA or the launcher's).
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-3}
THREADS=${THREADS:-1 2}
WORKLOADS=${WORKLOADS:-c a}
RECORDS=${RECORDS:-100000}
OPS=${OPS:-500000}
KVBENCH=${KVBENCH:-$PWD/target/release/kvbench}
JAVA=${KVBENCH_JAVA:-/usr/lib/jvm/temurin-25-jdk-amd64/bin/java}
LIB=$PWD/drivers/java/target
WORK=$(mktemp -d /tmp/kvbench-ycsb-java.XXXXXX)
trap 'rm -rf "$WORK"' EXIT

[[ -x $KVBENCH ]] || { echo "$KVBENCH missing: cargo build --release -p kvbench" >&2; exit 1; }
[[ -f $LIB/kvbench-java-worker.jar ]] || { echo "Java worker missing: drivers/java/build.sh" >&2; exit 1; }
[[ -x $JAVA ]] || { echo "$JAVA missing: install Temurin 25 or set KVBENCH_JAVA" >&2; exit 1; }
[[ -f $LIB/lib/core-0.17.0.jar ]] || { echo "YCSB core 0.17.0 missing in $LIB/lib: drivers/java/build.sh" >&2; exit 1; }

# ycsb_props WORKLOAD THREADS: YCSB's properties for the shared workload.
ycsb_props() {
    local read=1 update=0
    [[ $1 == a ]] && read=0.5 update=0.5
    echo "-p workload=site.ycsb.workloads.CoreWorkload -p recordcount=$RECORDS -p operationcount=$OPS" \
        "-p fieldcount=10 -p fieldlength=100 -p readallfields=true -p requestdistribution=zipfian" \
        "-p readproportion=$read -p updateproportion=$update -p scanproportion=0 -p insertproportion=0" \
        "-p threadcount=$2 -p kvbench.engine=java-lmdb -p kvbench.sync=none -p kvbench.dir=$WORK/ycsb-db"
}

# YCSB's Client with the JVM options the worker's launcher uses ($KVBENCH_JAVA_OPTS included).
ycsb() {
    # shellcheck disable=SC2086
    "$JAVA" ${KVBENCH_JAVA_OPTS:-} --enable-native-access=ALL-UNNAMED --sun-misc-unsafe-memory-access=allow \
        --add-opens java.base/java.nio=ALL-UNNAMED --add-opens java.base/sun.nio.ch=ALL-UNNAMED \
        -Dorg.slf4j.simpleLogger.defaultLogLevel=warn -Dkvbench.home="$PWD" \
        -cp "$LIB/kvbench-java-worker.jar:$LIB/lib/*" site.ycsb.Client "$@"
}

# Each runner prints the run phase's ops/s, or nothing when it was not measured (the reason goes
# to $WORK/failures).
run_ycsb() {
    rm -rf "$WORK/ycsb-db"
    # shellcheck disable=SC2046
    ycsb -load -db kvbench.ycsb.KvbenchBinding $(ycsb_props "$1" 1) >"$WORK/ycsb-load.out" 2>&1 ||
        { echo "ycsb-$1 threads $2: YCSB load failed" >>"$WORK/failures"; return; }
    # shellcheck disable=SC2046
    ycsb -t -db kvbench.ycsb.KvbenchBinding $(ycsb_props "$1" "$2") >"$WORK/ycsb-run.out" 2>&1 ||
        { echo "ycsb-$1 threads $2: YCSB run failed" >>"$WORK/failures"; return; }
    awk -F', ' '/^\[OVERALL\], Throughput/ {printf "%.0f\n", $3}' "$WORK/ycsb-run.out"
}

# run_kvbench WORKLOAD THREADS ENGINE [FLAGS...]
run_kvbench() {
    local w=$1 t=$2 engine=$3
    shift 3
    rm -rf "$WORK/results"
    "$KVBENCH" run "scenarios/ycsb-$w.toml" --engines "$engine" "$@" --records "$RECORDS" --ops "$OPS" \
        --threads "$t" --format json --timeout "${KVBENCH_TIMEOUT:-300}" --no-progress --out "$WORK/results" \
        --data-dir "$WORK/data" --plan-dir "$WORK/plans" >"$WORK/kv.json" 2>"$WORK/kv.err" || true
    python3 - "$WORK/kv.json" "ycsb-$w threads $t $engine" "$WORK/failures" <<'EOF'
import json, sys
path, what, failures = sys.argv[1:]
try:
    row = json.load(open(path))["engines"][0]
    run = next(p for p in row["phases"] if p["name"] == "run")
    bad = run["mismatches"] + run["missing"] + run["errors"]
    if run["status"] != "ok" or bad:
        raise ValueError(f"run phase {run['status']}, {bad} wrong, missing or failed reads/writes")
    print(round(run["ops_per_sec"]))
except Exception as e:  # noqa: BLE001 - any failure is reported, not measured
    open(failures, "a").write(f"{what}: {e}\n")
EOF
}

BINDING=ycsb:kvbench.ycsb.KvbenchBinding
# harness NAME WORKLOAD THREADS: one run of a harness, its ops/s printed (nothing if it failed).
harness() {
    case $1 in
        ycsb) run_ycsb "$2" "$3" ;;
        binding) run_kvbench "$2" "$3" "$BINDING" -O "$BINDING.kvbench.engine=java-lmdb" ;;
        kvbench) run_kvbench "$2" "$3" java-lmdb ;;
    esac
}

# median FILE: the median of a file of "round ops/s" lines (rounds are odd by default).
median() {
    awk '{print $2}' "$1" | sort -g | awk '{v[NR] = $1} END {if (NR) print v[int((NR + 1) / 2)]}'
}

# paired A B: the median of the per-round ratios A/B of two files of "round ops/s" lines, with
# a 95 % bootstrap interval (2 000 resamples of the rounds, a fixed seed).
paired() {
    python3 - "$1" "$2" <<'EOF'
import random, statistics, sys
a, b = ({int(r): float(v) for r, v in (line.split() for line in open(f))} for f in sys.argv[1:])
ratios = [a[r] / b[r] for r in sorted(a.keys() & b.keys())]
if not ratios:
    print("-")
    sys.exit()
rng = random.Random(43)
boot = sorted(statistics.median(rng.choices(ratios, k=len(ratios))) for _ in range(2000))
print(f"{statistics.median(ratios):.2f} ({boot[50]:.2f}-{boot[1949]:.2f})")
EOF
}

echo "java-lmdb: $("$KVBENCH" list java-lmdb 2>/dev/null | awk '$1 == "version" {$1 = ""; print}')"
echo "$RECORDS records, $OPS operations per run phase, $ROUNDS rounds; load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
for w in $WORKLOADS; do
    for t in $THREADS; do
        for ((r = 1; r <= ROUNDS; r++)); do
            # Odd rounds run YCSB first, even ones last: neither harness always follows the other.
            order="ycsb binding kvbench"
            ((r % 2)) || order="kvbench binding ycsb"
            for h in $order; do
                # Each harness starts with no dirty pages of another's store left for the kernel
                # to write back during its run (ext4 writes them back 30 s after they were written).
                sync
                harness "$h" "$w" "$t" | awk -v r="$r" '{print r, $1}' >>"$WORK/$h-$w-$t"
            done
        done
    done
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
printf '%-8s %-4s %10s %10s %10s %12s %12s  %s\n' workload thr ycsb binding kvbench binding/ycsb kvbench/ycsb \
    "binding/ycsb paired"
for w in $WORKLOADS; do
    for t in $THREADS; do
        touch "$WORK/ycsb-$w-$t" "$WORK/binding-$w-$t" "$WORK/kvbench-$w-$t"
        y=$(median "$WORK/ycsb-$w-$t") b=$(median "$WORK/binding-$w-$t") k=$(median "$WORK/kvbench-$w-$t")
        ratio() { [[ -n $1 && -n $2 ]] && awk -v a="$1" -v b="$2" 'BEGIN {printf "%.2f", a / b}' || echo -; }
        printf '%-8s %-4s %10s %10s %10s %12s %12s  %s\n' "ycsb-$w" "$t" "${y:--}" "${b:--}" "${k:--}" \
            "$(ratio "$b" "$y")" "$(ratio "$k" "$y")" "$(paired "$WORK/binding-$w-$t" "$WORK/ycsb-$w-$t")"
    done
done
echo
echo "each round, in order:"
for w in $WORKLOADS; do
    for t in $THREADS; do
        for h in ycsb binding kvbench; do
            printf '%-8s %-4s %-8s %s\n' "ycsb-$w" "$t" "$h" "$(awk '{printf "%s ", $2}' "$WORK/$h-$w-$t")"
        done
    done
done
[[ -s $WORK/failures ]] && { echo "not measured:"; sort "$WORK/failures" | uniq -c; }
echo "(ops/s of the run phase, medians of $ROUNDS alternated rounds; paired: the median of each round's" \
    "binding/ycsb, with a 95 % bootstrap interval; kvbench verified every read of the binding and" \
    "kvbench columns against its plan, YCSB verified none)"
