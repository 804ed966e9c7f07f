#!/usr/bin/env bash
# kvbench against go-ycsb (github.com/pingcap/go-ycsb) on the same engine and workload:
# bbolt (go.etcd.io/bbolt, the version drivers/go/go.mod pins), YCSB core workloads C and A,
# 100 000 records of 10 fields of 100 bytes (YCSB's default record, as the ycsb scenarios),
# 100 000 zipfian operations, 1 and 2 client threads, no fsync at commit on both. Both
# throughputs are ops over the run phase's wall clock.
#
# go-ycsb is built outside the repository from a pinned commit, with two edits made in the
# temporary copy only: cmd/go-ycsb registers just the boltdb binding (the others pull in
# TiKV, cloud SDKs ...), and the boltdb binding imports go.etcd.io/bbolt instead of the
# archived github.com/boltdb/bolt and reads a `bolt.no_sync` property (it has no way to turn
# fsync off otherwise, while kvbench's scenarios run with sync = "none").
#
# Usage: bench/go-ycsb.sh            (ROUNDS=3 THREADS="1 2" WORKLOADS="c a" by default)
#   GO_YCSB=/path/to/go-ycsb         use a binary built as above instead of building one
#   GO_YCSB_SRC=/path/to/checkout    build from this git checkout instead of cloning
# Needs target/release/kvbench (cargo build --release -p kvbench) and the Go worker
# (drivers/go/build.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
GO_YCSB_COMMIT=d383d2bebe8d63ea3d0b1e2c7315cc6abd3dd3c5
BBOLT_VERSION=$(awk '$1 == "go.etcd.io/bbolt" {print $2}' drivers/go/go.mod)
ROUNDS=${ROUNDS:-3}
THREADS=${THREADS:-1 2}
WORKLOADS=${WORKLOADS:-c a}
KVBENCH=./target/release/kvbench
WORK=$(mktemp -d /tmp/kvbench-go-ycsb.XXXXXX)
trap 'rm -rf "$WORK"' EXIT

[[ -x $KVBENCH ]] || { echo "$KVBENCH missing: cargo build --release -p kvbench" >&2; exit 1; }
[[ -x drivers/go/bin/kvbench-go-worker ]] || { echo "Go worker missing: drivers/go/build.sh" >&2; exit 1; }

build_go_ycsb() {
    local src=$WORK/go-ycsb-src
    if [[ -n ${GO_YCSB_SRC:-} ]]; then
        mkdir -p "$src"
        git -C "$GO_YCSB_SRC" archive "$GO_YCSB_COMMIT" | tar -x -C "$src"
    else
        git clone -q https://github.com/pingcap/go-ycsb "$src"
        git -C "$src" checkout -q "$GO_YCSB_COMMIT"
    fi
    # Keep only the boltdb binding's registration.
    sed -i -E '/_ "github.com\/pingcap\/go-ycsb\/db\//{/db\/boltdb"/!d}' "$src/cmd/go-ycsb/main.go"
    # Same engine as kvbench's go-bbolt, and a property for NoSync.
    sed -i -e 's#"github.com/boltdb/bolt"#bolt "go.etcd.io/bbolt"#' \
        -e 's#opts.InitialMmapSize = p.GetInt(boltInitialMmapSize, 0)#&\n\topts.NoSync = p.GetBool("bolt.no_sync", false)#' \
        "$src/db/boltdb/db.go"
    grep -q 'bolt.no_sync' "$src/db/boltdb/db.go" || { echo "go-ycsb's boltdb binding changed: patch failed" >&2; exit 1; }
    (cd "$src" && GOFLAGS=-mod=mod go get "go.etcd.io/bbolt@$BBOLT_VERSION" >/dev/null 2>&1 &&
        GOFLAGS=-mod=mod go build -o "$WORK/go-ycsb" ./cmd/go-ycsb)
    echo "$WORK/go-ycsb"
}

GO_YCSB=${GO_YCSB:-$(build_go_ycsb)}

# props WORKLOAD THREADS: go-ycsb properties for the shared workload.
props() {
    local read=1 update=0
    [[ $1 == a ]] && read=0.5 update=0.5
    echo "-p workload=core -p recordcount=100000 -p operationcount=100000 -p fieldcount=10" \
        "-p fieldlength=100 -p readallfields=true -p requestdistribution=zipfian" \
        "-p readproportion=$read -p updateproportion=$update -p scanproportion=0" \
        "-p insertproportion=0 -p threadcount=$2 -p bolt.path=$WORK/bolt.db -p bolt.no_sync=true"
}

# Each runner prints: ops/s read_avg_us read_p99_us update_avg_us update_p99_us ("-" if none),
# or nothing when the run phase was not measured (the reason goes to $WORK/failures).
# kvbench names the latency of a phase with one operation kind [MIXED]: that is C's reads.
run_kvbench() {
    $KVBENCH run "scenarios/ycsb-$1.toml" --engines go-bbolt --threads "$2" --format ycsb \
        --timeout "${KVBENCH_TIMEOUT:-120}" --no-progress --out "$WORK/results" \
        --data-dir "$WORK/data" --plan-dir "$WORK/plans" 2>/dev/null |
        awk -v w="ycsb-$1 threads $2" -v fl="$WORK/failures" '
             /^# engine .* phase run / {on = 1; next} /^# not measured/ && on {print w ": " $0 >> fl}
             /^# / {on = 0}
             on && /\[OVERALL\], Throughput/ {t = $3}
             on && /\[(READ|MIXED)\], AverageLatency/ {ra = $3} on && /\[(READ|MIXED)\], 99th/ {rp = $3}
             on && /\[UPDATE\], AverageLatency/ {ua = $3} on && /\[UPDATE\], 99th/ {up = $3}
             END {if (t) printf "%.0f %s %s %s %s\n", t, ra ? ra : "-", rp ? rp : "-", ua ? ua : "-", up ? up : "-"}' || true
}

run_go_ycsb() {
    rm -f "$WORK/bolt.db"
    # shellcheck disable=SC2046
    "$GO_YCSB" load boltdb $(props "$1" "$2") >/dev/null 2>&1
    # shellcheck disable=SC2046
    "$GO_YCSB" run boltdb $(props "$1" "$2") 2>&1 |
        awk 'function secs(d,   a) {   # a Go duration: 812.5ms, 3.09s, 1m2.5s
                 if (d ~ /ms$/) return d / 1e3
                 if (d ~ /(µs|us)$/) return d / 1e6
                 if (d ~ /m[0-9.]+s$/) {split(d, a, "m"); return a[1] * 60 + a[2]}
                 return d + 0
             }
             function f(k,   i) {for (i = 1; i <= NF; i++) if ($i == k) return $(i + 1) + 0}
             /^Run finished, takes/ {t = 100000 / secs($4); on = 1}
             on && /^READ / {ra = f("Avg(us):"); rp = f("99th(us):")}
             on && /^UPDATE / {ua = f("Avg(us):"); up = f("99th(us):")}
             END {printf "%.0f %s %s %s %s\n", t, ra ? ra : "-", rp ? rp : "-", ua ? ua : "-", up ? up : "-"}'
}

# median COLUMN FILE: the median of one column of a results file (rounds are odd by default).
median() {
    awk -v c="$1" '{print $c}' "$2" | sort -g | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'
}

echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
for w in $WORKLOADS; do
    for t in $THREADS; do
        for ((r = 1; r <= ROUNDS; r++)); do
            run_kvbench "$w" "$t" >>"$WORK/kv-$w-$t"
            run_go_ycsb "$w" "$t" >>"$WORK/gy-$w-$t"
        done
    done
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
printf '%-8s %-4s %-8s %10s %10s %9s %9s %10s %10s\n' workload thr tool ops/s read-avg read-p99 upd-avg upd-p99 ratio
for w in $WORKLOADS; do
    for t in $THREADS; do
        for tool in kvbench go-ycsb; do
            f=$WORK/gy-$w-$t
            [[ $tool == kvbench ]] && f=$WORK/kv-$w-$t
            if [[ ! -s $f ]]; then
                printf '%-8s %-4s %-8s %10s\n' "ycsb-$w" "$t" "$tool" "not measured"
                continue
            fi
            ratio=1.00
            if [[ $tool == kvbench && -s $WORK/gy-$w-$t ]]; then
                ratio=$(awk -v a="$(median 1 "$f")" -v b="$(median 1 "$WORK/gy-$w-$t")" 'BEGIN {printf "%.2f", a / b}')
            fi
            printf '%-8s %-4s %-8s %10s %10s %9s %9s %10s %10s\n' "ycsb-$w" "$t" "$tool" \
                "$(median 1 "$f")" "$(median 2 "$f")" "$(median 3 "$f")" \
                "$(median 4 "$f")" "$(median 5 "$f")" "$ratio"
        done
    done
done
[[ -s $WORK/failures ]] && { echo "kvbench rounds not measured:"; sort "$WORK/failures" | uniq -c; }
echo "(medians of $ROUNDS alternated rounds; latencies in µs; ratio = kvbench ops/s ÷ go-ycsb ops/s)"
