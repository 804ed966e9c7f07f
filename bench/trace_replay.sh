#!/usr/bin/env bash
# Trace replay beside db_bench: one RocksDB trace (db_bench's mixgraph with the FAST '20 settings,
# recorded with -trace_file) replayed by RocksDB's own tool (Debian's rocksdb-tools,
# `db_bench -benchmarks=replay`, linked against the same librocksdb as kvbench's `rocksdb` row)
# and by kvbench's replay phase on its `rocksdb` row, alternated round after round; prints per
# round and the median the ops/s of each and their ratio (kvbench / db_bench), and checks that
# both ran the same operations by kind. Then replays the same trace with kvbench on ENGINES, each
# read verified, and prints their ops/s and mismatches/missing (both must be 0).
#
# Matched on both sides:
# - The trace: the same file, closed loop (db_bench -trace_replay_fast_forward=1000000, so its
#   replayer never sleeps; kvbench without `speed`), one thread. db_bench prints one "operation"
#   for the whole replay: its ops/s is the trace's ops divided by its seconds.
# - The starting state: kvbench's replay loads the keys the trace reads before writing them into
#   an empty store, then replays. The script runs kvbench once with --keep-data and
#   --duration replay=1ms, so only that load happens (the load is flushed to one L0 SST file by
#   the reopen before the replay; the WAL left beside it holds only the <1 ms of replay, and is
#   removed), and copies that directory afresh as db_bench's DB for every db_bench round.
#   kvbench's replay phase has `cache = "reopen"`: it closes and reopens the store before the
#   replay, so it too reads the load from that one SST file, page cache kept, as db_bench does.
# - Options: block cache (db_bench --cache_size, kvbench block_cache), compression, no bloom
#   filter, pipelined write off, statistics on, WAL on, no sync. Everything else is each side's
#   default; OPTIONS=1 prints the options that differ between the two OPTIONS files (default
#   column family; db_bench needs --num_column_families=2 on Debian's 7.8.3, else an assertion
#   aborts the replay, so its DB has a second, empty column family that the trace never uses).
#
# Op counts: db_bench's mixgraph line at recording gives the trace's Gets, Puts and Seeks;
# kvbench's result gives plan.trace.by_kind and the replay phase's ops; db_bench's replay gives
# its tickers (rocksdb.number.keys.read, .number.keys.written, .number.db.seek). All must agree.
#
# Usage: bench/trace_replay.sh    (ROUNDS=3 OPS=1000000 (mixgraph ops recorded) RECORDS=1000000
#   (db_bench fillrandom records of the recording DB) CACHE=8388608 COMPRESSION=snappy
#   ENGINES="lmdb go-pebble py-rocksdict" DATA=/var/tmp (a directory on a real disk)
#   WORK=$DATA/kvbench-trace_replay (the recorded trace is kept there and reused) OPTIONS=0
#   KVBENCH=target/release/kvbench DB_BENCH=/usr/bin/db_bench)
#   go-pebble needs the Go worker and py-rocksdict the Python one (`make go python`). On 2 cores,
#   recording takes ~1.5 minutes once, each round ~1 minute, the engines ~3 minutes.
#   Needs /usr/bin/db_bench, python3.
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-3}
OPS=${OPS:-1000000}
RECORDS=${RECORDS:-1000000}
CACHE=${CACHE:-8388608}
COMPRESSION=${COMPRESSION:-snappy}
ENGINES=${ENGINES:-lmdb go-pebble py-rocksdict}
DATA=${DATA:-/var/tmp}
WORK=${WORK:-$DATA/kvbench-trace_replay}
OPTIONS=${OPTIONS:-0}
KVBENCH=${KVBENCH:-$PWD/target/release/kvbench}
DB_BENCH=${DB_BENCH:-/usr/bin/db_bench}

[[ -x $KVBENCH ]] || { echo "$KVBENCH missing: cargo build --release -p kvbench" >&2; exit 1; }
[[ -x $DB_BENCH ]] || { echo "$DB_BENCH missing: make deps (rocksdb-tools)" >&2; exit 1; }
command -v python3 >/dev/null || { echo "python3 missing" >&2; exit 1; }
mkdir -p "$WORK"
RUN=$(mktemp -d "$WORK/run.XXXXXX")
trap 'rm -rf "$RUN"' EXIT

TRACE=$WORK/mixgraph-r$RECORDS-o$OPS.trace
MIXLOG=$TRACE.log # db_bench's mixgraph output: the trace's ops by kind

# 1. Record the trace once: a fillrandom DB, then mixgraph on it with -trace_file.
if [[ ! -s $TRACE || ! -s $MIXLOG ]]; then
    echo "== recording $TRACE ($OPS mixgraph ops on $RECORDS fillrandom records)"
    rm -rf "$WORK/record-db" "$TRACE"
    "$DB_BENCH" --db="$WORK/record-db" --benchmarks=fillrandom --num="$RECORDS" --key_size=16 \
        --value_size=100 --seed=42 >"$RUN/fill.out" 2>&1 || { cat "$RUN/fill.out" >&2; exit 1; }
    "$DB_BENCH" --db="$WORK/record-db" --use_existing_db=1 --benchmarks=mixgraph --num="$RECORDS" \
        --reads="$OPS" --key_size=16 --value_size=100 --seed=42 -keyrange_num=1 -value_k=0.2615 \
        -value_sigma=25.45 -iter_k=2.517 -iter_sigma=14.236 -mix_get_ratio=0.85 -mix_put_ratio=0.14 \
        -mix_seek_ratio=0.01 -sine_mix_rate=false -trace_file="$TRACE" >"$MIXLOG.tmp" 2>&1 ||
        { cat "$MIXLOG.tmp" >&2; exit 1; }
    mv "$MIXLOG.tmp" "$MIXLOG"
    rm -rf "$WORK/record-db"
fi
# Gets Puts Seeks of the trace, from "( Gets:N Puts:M Seek:K, ...)".
read -r GETS PUTS SEEKS < <(sed -n 's/.*Gets:\([0-9]*\) Puts:\([0-9]*\) Seek:\([0-9]*\).*/\1 \2 \3/p' "$MIXLOG")
TOTAL=$((GETS + PUTS + SEEKS))
echo "== trace: $TOTAL ops (Gets $GETS, Puts $PUTS, Seeks $SEEKS), $(stat -c %s "$TRACE") bytes"

# The kvbench scenario: the rocksdb row with db_bench's matched options, the load the replay
# needs, then the replay after a reopen.
cat >"$RUN/scenario.toml" <<EOF
# Trace replay beside db_bench (bench/trace_replay.sh): the rocksdb row with db_bench's options.
name = "trace-replay"
sync = "none"
[[engine]]
name = "rocksdb"
options = { block_cache = $CACHE, compression = "$COMPRESSION", bloom_bits = 0, wal = true, pipelined_write = false, statistics = true }
[[phase]]
kind = "load"
[[phase]]
kind = "replay"
trace = "$TRACE"
cache = "reopen"
EOF

db_bench_replay_args() {
    echo --db="$RUN/db" --use_existing_db=1 --num_column_families=2 --benchmarks=replay \
        -trace_file="$TRACE" -trace_replay_fast_forward=1000000 --cache_size="$CACHE" \
        --compression_type="$COMPRESSION" --bloom_bits=0 --enable_pipelined_write=false \
        --disable_wal=false --sync=false --statistics=1
}

# 2. The shared starting state: kvbench's load, kept.
rm -rf "$RUN/kv" "$RUN/out"
"$KVBENCH" run "$RUN/scenario.toml" --data-dir "$RUN/kv" --plan-dir "$RUN/plans" --out "$RUN/out" \
    --no-progress --keep-data --duration replay=1ms --format json >"$RUN/prep.out" 2>&1 ||
    { cat "$RUN/prep.out" >&2; exit 1; }
src=$(find "$RUN/kv" -maxdepth 2 -type d -name 'rocksdb-r0' | head -1)
rm -rf "$WORK/start"
cp -a "$src" "$WORK/start"
rm -f "$WORK/start"/*.log # the <1 ms of replay; the load is in the SST the reopen flushed
rm -rf "$RUN/kv" "$RUN/out"
echo "== starting state: $(find "$WORK/start" -name '*.sst' | wc -l) SST file(s)," \
    "$(du -sk "$WORK/start" | cut -f1) KiB (kvbench's load of the keys read before written)"

if [[ $OPTIONS == 1 ]]; then
    rm -rf "$RUN/db" && cp -a "$WORK/start" "$RUN/db"
    # A replay of nothing: open and close (db_bench writes its OPTIONS file on open).
    # shellcheck disable=SC2046
    "$DB_BENCH" $(db_bench_replay_args) -trace_replay_fast_forward=1000000 --benchmarks=flush >/dev/null 2>&1 || true
    echo "== OPTIONS that differ (default column family; db_bench, kvbench's rocksdb row)"
    python3 - "$(ls "$RUN"/db/OPTIONS-* | tail -1)" "$(ls "$WORK"/start/OPTIONS-* | tail -1)" <<'EOF'
import sys
def parse(f):
    d, sec = {}, None
    for l in open(f):
        l = l.strip()
        if not l or l.startswith('#'):
            continue
        if l.startswith('['):
            sec = l.split()[0].strip('[]') if '"' not in l or '"default"' in l else None
            continue
        if sec and '=' in l:
            k, v = l.split('=', 1)
            d[(sec, k)] = v
    return d
a, b = parse(sys.argv[1]), parse(sys.argv[2])
for k in sorted(set(a) | set(b)):
    if a.get(k) != b.get(k):
        print(f"  {k[0]} {k[1]}: db_bench {a.get(k, '-')}, kvbench {b.get(k, '-')}")
EOF
fi

# db_bench's replay on a fresh copy; prints "ops/s seconds gets puts seeks".
run_db_bench() {
    rm -rf "$RUN/db"
    cp -a "$WORK/start" "$RUN/db"
    # shellcheck disable=SC2046
    "$DB_BENCH" $(db_bench_replay_args) >"$RUN/db.out" 2>&1 || { cat "$RUN/db.out" >&2; exit 1; }
    python3 - "$RUN/db.out" "$TOTAL" <<'EOF'
import re, sys
out, total = open(sys.argv[1]).read(), int(sys.argv[2])
secs = float(re.search(r"^replay\s*:.*?([0-9.]+) seconds", out, re.M).group(1))
tick = lambda n: int(re.search(r"^rocksdb\." + re.escape(n) + r" COUNT : (\d+)", out, re.M).group(1))
print(total / secs, secs, tick("number.keys.read"), tick("number.keys.written"), tick("number.db.seek"))
EOF
    rm -rf "$RUN/db"
}

# kvbench's replay (load, reopen, replay); prints "ops/s seconds gets puts seeks ops mismatches missing".
run_kvbench() {
    rm -rf "$RUN/kv" "$RUN/out"
    "$KVBENCH" run "$RUN/scenario.toml" --data-dir "$RUN/kv" --plan-dir "$RUN/plans" --out "$RUN/out" \
        --no-progress --format json >"$RUN/kv.out" 2>&1 || { cat "$RUN/kv.out" >&2; exit 1; }
    python3 - "$RUN/out" <<'EOF'
import glob, json, sys
run = json.load(open(sorted(glob.glob(sys.argv[1] + "/*-*.json"))[0]))
k = run["plan"]["trace"]["by_kind"]
p = [p for p in run["engines"][0]["phases"] if p["name"] == "replay"][0]
assert p["status"] == "ok", p["status"]
print(p["ops_per_sec"], p["wall_ns"] / 1e9, k.get("get", 0), k.get("put", 0), k.get("scan", 0),
      p["ops"], p["mismatches"], p["missing"])
EOF
    rm -rf "$RUN/kv" "$RUN/out"
}

# 3. Rounds, alternated: db_bench first in even rounds, kvbench first in odd ones.
echo "== db_bench $("$DB_BENCH" --version 2>&1 | head -1 | awk '{print $3}') replay beside kvbench's" \
    "rocksdb row: cache $CACHE, $COMPRESSION, no bloom, WAL on, no sync, closed loop, 1 thread;" \
    "$ROUNDS rounds, alternated"
: >"$RUN/db.txt"
: >"$RUN/kv.txt"
for ((r = 0; r < ROUNDS; r++)); do
    if ((r % 2 == 0)); then
        run_db_bench >>"$RUN/db.txt"
        run_kvbench >>"$RUN/kv.txt"
    else
        run_kvbench >>"$RUN/kv.txt"
        run_db_bench >>"$RUN/db.txt"
    fi
    python3 - "$r" "$RUN/db.txt" "$RUN/kv.txt" <<'EOF'
import sys
r = int(sys.argv[1])
d = [float(x) for x in open(sys.argv[2]).read().split("\n")[r].split()]
k = [float(x) for x in open(sys.argv[3]).read().split("\n")[r].split()]
print(f"round {r + 1}: db_bench {d[0]:8.0f} ops/s ({d[1]:6.2f} s)   kvbench {k[0]:8.0f} ops/s "
      f"({k[1]:6.2f} s)   ratio {k[0] / d[0]:.3f}")
EOF
done
python3 - "$RUN/db.txt" "$RUN/kv.txt" "$GETS" "$PUTS" "$SEEKS" <<'EOF'
import statistics as st, sys
rows = lambda f: [list(map(float, l.split())) for l in open(f) if l.strip()]
d, k = rows(sys.argv[1]), rows(sys.argv[2])
trace = tuple(int(x) for x in sys.argv[3:6])
ratios = sorted(b[0] / a[0] for a, b in zip(d, k))
print(f"median: db_bench {st.median(r[0] for r in d):8.0f} ops/s   kvbench {st.median(r[0] for r in k):8.0f} "
      f"ops/s   ratio {st.median(ratios):.3f} (ratios {' '.join(f'{x:.3f}' for x in ratios)})")
bad = 0
for name, rs, idx in (("db_bench replay (tickers)", d, (2, 3, 4)), ("kvbench plan.trace.by_kind", k, (2, 3, 4))):
    for r in rs:
        got = tuple(int(r[i]) for i in idx)
        if got != trace:
            bad += 1
            print(f"MISMATCH {name}: gets/puts/seeks {got}, trace {trace}")
for r in k:
    if int(r[5]) != sum(trace) or r[6] or r[7]:
        bad += 1
        print(f"MISMATCH kvbench replay phase: ops {int(r[5])} (trace {sum(trace)}), mismatches {int(r[6])}, missing {int(r[7])}")
print(f"op counts: trace gets {trace[0]} puts {trace[1]} seeks {trace[2]}; "
      + ("db_bench and kvbench agree in every round" if not bad else f"{bad} disagreements"))
sys.exit(1 if bad else 0)
EOF

# 4. The same trace on other engines, every read verified.
[[ -n $ENGINES ]] && echo "== the same trace on other engines (kvbench run --trace, closed loop, reads verified)"
for e in $ENGINES; do
    rm -rf "$RUN/kv" "$RUN/out"
    if ! "$KVBENCH" run --trace "$TRACE" --engines "$e" --data-dir "$RUN/kv" --plan-dir "$RUN/plans" \
        --out "$RUN/out" --no-progress --format json >"$RUN/e.out" 2>&1; then
        echo "$e: failed"; tail -5 "$RUN/e.out"; continue
    fi
    python3 - "$RUN/out" "$e" <<'EOF'
import glob, json, sys
run = json.load(open(sorted(glob.glob(sys.argv[1] + "/*-*.json"))[0]))
eng = run["engines"][0]
p = [p for p in eng["phases"] if p["name"] == "replay"]
if eng["status"] != "ok" or not p or p[0]["status"] != "ok":
    print(f"{sys.argv[2]:<14} {eng['status']}: {p[0]['status'] if p else 'no replay phase'}")
else:
    p = p[0]
    ok = "ok" if p["mismatches"] == 0 and p["missing"] == 0 and p["errors"] == 0 else "FAILED"
    print(f"{sys.argv[2]:<14} {p['ops_per_sec']:9.0f} ops/s  ops {p['ops']}  mismatches {p['mismatches']}  "
          f"missing {p['missing']}  errors {p['errors']}  {ok}")
EOF
    rm -rf "$RUN/kv" "$RUN/out"
done
