#!/usr/bin/env bash
# What the harness costs: LMDB random get (every record once, random order, 100-byte values,
# kvbench's default 16-digit keys and shuffled load) through kvbench's Rust worker against the
# minimal hand-written loop of crates/kvbench-engines/examples/lmdb_minimal.rs (same library,
# a clock read around each get). Both by wall clock; alternating rounds; medians and the ratio.
#   scripts/bench-harness.sh [RECORDS] [ROUNDS]      (make bench-harness runs 1 M and 10 M)
set -euo pipefail
cd "$(dirname "$0")/.."
records=${1:-1000000}
rounds=${2:-3}
# Two builds: with --example, cargo builds only the example, not kvbench itself.
cargo build -q --release -p kvbench
cargo build -q --release -p kvbench-engines --example lmdb_minimal
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
median() { sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }
minimal() {
    local line
    line=$(./target/release/examples/lmdb_minimal "$records" 100)
    sed -E 's/.*s, ([0-9]+) ops\/s.*/\1/' <<< "$line" >> "$out/minimal"
    sed -E 's/.*CPU ([0-9]+) ns\/op.*/\1/' <<< "$line" >> "$out/minimal-cpu"
}
kvbench() {
    ./target/release/kvbench run --engines lmdb --records "$records" --value-size 100 --workload readrandom \
        --out "$out/r$1" --data-dir "$out/data" --plan-dir "$out/plans" --no-progress --format json > "$out/r$1.json" 2>/dev/null
    python3 - "$out/r$1.json" "$out" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
p = [p for p in r['engines'][0]['phases'] if p['name'] == 'get'][0]
print(p['ops_per_sec'], file=open(sys.argv[2] + '/kvbench', 'a'))
print(round((p['cpu_user_ns'] + p['cpu_sys_ns']) / p['ops']), file=open(sys.argv[2] + '/kvbench-cpu', 'a'))
PY
}
# Neither program syncs its load (sync = none), so the kernel writes its pages back some 30 s
# later, while a later program reads: `sync` before each one starts it with nothing dirty, and
# which one goes first alternates.
for i in $(seq "$rounds"); do
    if (( i % 2 )); then sync; minimal; sync; kvbench "$i"; else sync; kvbench "$i"; sync; minimal; fi
done
m=$(median < "$out/minimal")
k=$(median < "$out/kvbench")
printf 'LMDB random get, %s records x 100 B, %s rounds (median ops/s, wall clock)\n' "$records" "$rounds"
printf '  minimal loop : %.0f   (%s)\n' "$m" "$(tr '\n' ' ' < "$out/minimal")"
printf '  kvbench      : %.0f   (%s)\n' "$k" "$(tr '\n' ' ' < "$out/kvbench")"
printf '  ratio        : %.3f\n' "$(echo "$k / $m" | bc -l)"
# CPU time per get (the phase's process CPU over its gets): steadier than wall time on a busy
# machine, though it cannot show time spent waiting.
mc=$(median < "$out/minimal-cpu")
kc=$(median < "$out/kvbench-cpu")
printf '  CPU ns/get   : minimal %s (%s), kvbench %s (%s), ratio %.3f\n' "$mc" "$(tr '\n' ' ' < "$out/minimal-cpu")" \
    "$kc" "$(tr '\n' ' ' < "$out/kvbench-cpu")" "$(echo "$mc / $kc" | bc -l)"
# How far the ratio can be trusted on this machine: the ratio of each round's pair, and a 95 %
# interval of the ratio of medians from resampling the rounds (a few per cent of run-to-run
# noise is common on a shared VM; the interval says whether a target is met or only touched).
python3 - "$out/kvbench" "$out/minimal" <<'PY'
import random, statistics, sys
k = [float(x) for x in open(sys.argv[1])]
m = [float(x) for x in open(sys.argv[2])]
pairs = [a / b for a, b in zip(k, m)]
rng = random.Random(1)
boot = sorted(statistics.median(rng.choices(k, k=len(k))) / statistics.median(rng.choices(m, k=len(m)))
              for _ in range(2000))
print('  pair ratios  : ' + ' '.join(f'{p:.3f}' for p in pairs))
print(f'  95% interval : {boot[49]:.3f} .. {boot[1949]:.3f} (ratio of medians, rounds resampled)')
PY
