#!/usr/bin/env bash
# db_bench beside kvbench: RocksDB's own benchmark (Debian's rocksdb-tools, /usr/bin/db_bench,
# linked against the same librocksdb as kvbench's `rocksdb` row) and kvbench's `rocksdb` row,
# run alternately with the same options, round after round; prints per benchmark the median
# ops/s of each and their ratio (kvbench / db_bench), and the device bytes each process caused
# to be read and written per operation (getrusage of the finished process: /usr/bin/time %I %O,
# the kernel's read_bytes/write_bytes of every thread; the whole process, so for overwrite and
# readrandom the load that precedes them is included, in both tools alike).
#
# Matched on both sides: records, keys (16 bytes: the record number's 8 big-endian bytes padded
# with '0', kvbench's `db-bench` key kind; block prefix compression keeps ~7 bytes fewer a record
# of 16-digit decimal keys, a store 6 % smaller at 4 M records), value size and content (kvbench's printable values are random
# characters of a 93-letter alphabet; db_bench's --compression_ratio=1 makes its values random
# characters of a 95-letter alphabet, so both compress alike under every codec; db_bench's own
# default, 0.5, repeats each half-value twice and halves the bytes RocksDB flushes), block
# cache (db_bench --cache_size, kvbench block_cache), compression, WAL on/off, sync, read threads, write batch, bloom filter (none: db_bench's
# filter_policy=nullptr), pipelined write, direct I/O, statistics (on in both by default: the
# kvbench row keeps RocksDB's tickers for its internals; db_bench --statistics=1). Everything
# else is each side's default, and `OPTIONS=1` prints the diff of the two OPTIONS files
# RocksDB writes into the data directory (docs/methodology.md, "db_bench beside kvbench").
#
# Benchmarks (BENCHES; `NAME/B` runs NAME with write batches of B records, default 1):
# Each pair does the same work: the same writes of the same number of distinct keys (the table
# prints both sides' distinct keys, counted with ldb after the first round, and bytes written).
#   fillseq             db_bench fillseq            vs kvbench load in key order
#   filluniquerandom    db_bench filluniquerandom   vs kvbench load in random order (every key
#                       once: distribution = "shuffle")
#   fillrandom          db_bench fillrandom draws keys WITH replacement (~63 % of N distinct);
#                       kvbench has no such load (a load's `uniform` is a random order of
#                       every key, as `shuffle`), so fillrandom is refused unless UNMATCHED=1,
#                       which runs it beside the shuffled load and marks its row UNMATCHED.
#   overwrite           db_bench filluniquerandom,overwrite vs kvbench load + update (uniform)
#   readrandom          db_bench filluniquerandom,readrandom vs kvbench load + get (uniform)
#   readwhilewriting    db_bench filluniquerandom,readwhilewriting vs kvbench load + get
#                       (uniform) with `writer = { rate = WRITE_RATE }`: the readers' ops/s
#                       under one writer paced at WRITE_RATE updates/s (db_bench's
#                       --benchmark_write_rate_limit is bytes/s: WRITE_RATE x (key + value)).
#
# Usage: bench/db_bench.sh    (ROUNDS=3 RECORDS=1000000 VALUE_SIZE=100 CACHE=8388608
#   COMPRESSION=snappy COMPRESSION_RATIO=1 (db_bench's values) WAL=1 SYNC=0 THREADS=1
#   PIPELINED=0 DIRECT=0 STATISTICS=1 WRITE_RATE=10000 (readwhilewriting's writer, updates/s)
#   BENCHES="fillseq filluniquerandom filluniquerandom/1000 overwrite readrandom"
#   DATA=/var/tmp (a directory on a real disk) OPTIONS=0 KVBENCH=target/release/kvbench)
#   BUDGET=512MiB runs both under a memory cgroup of that size and compares them phase by
#   phase, load, settle and the benchmark's own (bench/db_bench_budget.sh).
#   ROUNDS=7 for tighter medians. Each round runs every benchmark once in each tool. On 2 cores
#   shared with other jobs (load average 8-11), 3 rounds of fillseq, overwrite and readrandom
#   took 14 minutes and of fillrandom and fillrandom/1000 about 5; a quiet machine runs 2-3
#   times faster. Needs target/release/kvbench, /usr/bin/db_bench, /usr/bin/time, python3.
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-3}
RECORDS=${RECORDS:-1000000}
VALUE_SIZE=${VALUE_SIZE:-100}
CACHE=${CACHE:-8388608}
COMPRESSION=${COMPRESSION:-snappy}
COMPRESSION_RATIO=${COMPRESSION_RATIO:-1}
WAL=${WAL:-1}
SYNC=${SYNC:-0}
THREADS=${THREADS:-1}
PIPELINED=${PIPELINED:-0}
DIRECT=${DIRECT:-0}
STATISTICS=${STATISTICS:-1}
WRITE_RATE=${WRITE_RATE:-10000}
BENCHES=${BENCHES:-fillseq filluniquerandom filluniquerandom/1000 overwrite readrandom}
DATA=${DATA:-/var/tmp}
OPTIONS=${OPTIONS:-0}
KVBENCH=${KVBENCH:-$PWD/target/release/kvbench}
DB_BENCH=${DB_BENCH:-/usr/bin/db_bench}
BUDGET=${BUDGET:-}

[[ -x $KVBENCH ]] || { echo "$KVBENCH missing: cargo build --release -p kvbench" >&2; exit 1; }
[[ -x $DB_BENCH ]] || { echo "$DB_BENCH missing: make deps (rocksdb-tools)" >&2; exit 1; }
for b in /usr/bin/time python3; do command -v "$b" >/dev/null || { echo "$b missing" >&2; exit 1; }; done
WORK=$(mktemp -d "$DATA/kvbench-db_bench.XXXXXX")
trap 'rm -rf "$WORK"' EXIT

tf() { if [[ $1 == 1 ]]; then echo true; else echo false; fi; }
sync_mode() { if [[ $SYNC == 1 ]]; then echo commit; else echo none; fi; }

# db_bench flags for the matched options and one benchmark.
db_bench_args() {
    local benchmarks=$1 batch=$2
    echo --db="$WORK/db_bench" --benchmarks="$benchmarks" --num="$RECORDS" --reads="$RECORDS" \
        --key_size=16 --value_size="$VALUE_SIZE" --cache_size="$CACHE" \
        --compression_type="$COMPRESSION" --compression_ratio="$COMPRESSION_RATIO" --disable_wal="$(tf $((1 - WAL)))" --sync="$(tf "$SYNC")" \
        --batch_size="$batch" --bloom_bits=0 --enable_pipelined_write="$(tf "$PIPELINED")" \
        --use_direct_reads="$(tf "$DIRECT")" --use_direct_io_for_flush_and_compaction="$(tf "$DIRECT")" \
        --statistics="$(tf "$STATISTICS")" --seed=42 --benchmark_write_rate_limit="${3:-0}"
}

# A kvbench scenario with the matched row and `phases` (TOML of [[phase]] tables).
kvbench_scenario() {
    local file=$1 phases=$2
    cat >"$file" <<EOF
# db_bench beside kvbench (bench/db_bench.sh): the rocksdb row with db_bench's matched options.
name = "db-bench"
sync = "$(sync_mode)"
[[engine]]
name = "rocksdb"
options = { block_cache = $CACHE, compression = "$COMPRESSION", bloom_bits = 0, wal = $(tf "$WAL"), pipelined_write = $(tf "$PIPELINED"), direct_reads = $(tf "$DIRECT"), direct_io_for_flush_and_compaction = $(tf "$DIRECT"), statistics = $(tf "$STATISTICS") }
[dataset]
records = $RECORDS
key = { kind = "db-bench", width = 16 }
value = { size = $VALUE_SIZE }
$phases
EOF
}

# The uniform get phase; $1 = 1 reopens the store first (cache = "reopen", page cache kept),
# as db_bench reads from a second process on the reopened files when it has more than one
# read thread or a paced writer (run_db_bench); $2: more fields of the phase.
get_phase() {
    local reopen=""
    [[ $1 == 1 ]] && reopen='cache = "reopen"'
    printf '[[phase]]\nkind = "get"\ndistribution = "uniform"\ncount = %s\nthreads = %s\n%s\n%s\n' \
        "$RECORDS" "$THREADS" "$reopen" "$2"
}

load_phase() { printf '[[phase]]\nkind = "load"\ndistribution = "%s"\nbatch = %s\n' "$1" "$2"; }

# For benchmark $1 (NAME or NAME/B): sets DB_BENCHMARKS, DB_LINE (the db_bench result line
# compared), PHASES (kvbench) and PHASE (the kvbench phase compared).
define() {
    local name=${1%/*} batch=1
    [[ $1 == */* ]] && batch=${1#*/}
    BATCH=$batch
    case $name in
        fillseq) DB_BENCHMARKS=fillseq PHASES=$(load_phase sequential "$batch") PHASE=load ;;
        filluniquerandom) DB_BENCHMARKS=$name PHASES=$(load_phase shuffle "$batch") PHASE=load ;;
        fillrandom)
            if [[ ${UNMATCHED:-0} != 1 ]]; then
                echo "fillrandom writes ~63 % distinct keys, kvbench's load every key once: compare" \
                    "filluniquerandom (or UNMATCHED=1 to run it anyway)" >&2
                exit 1
            fi
            DB_BENCHMARKS=$name PHASES=$(load_phase shuffle "$batch") PHASE=load ;;
        overwrite)
            DB_BENCHMARKS=filluniquerandom,overwrite PHASE=update
            PHASES="$(load_phase shuffle "$batch")
$(printf '[[phase]]\nkind = "update"\ndistribution = "uniform"\ncount = %s\nbatch = %s\n' "$RECORDS" "$batch")" ;;
        readrandom)
            DB_BENCHMARKS=filluniquerandom,readrandom PHASE=get
            PHASES="$(load_phase shuffle "$batch")
$(get_phase "$((THREADS != 1))" "")" ;;
        readwhilewriting)
            DB_BENCHMARKS=filluniquerandom,readwhilewriting PHASE=get
            PHASES="$(load_phase shuffle "$batch")
$(get_phase 1 "writer = { rate = $WRITE_RATE }")" ;;
        *) echo "unknown benchmark $1 (see the header)" >&2; exit 1 ;;
    esac
    DB_LINE=${DB_BENCHMARKS##*,}
}

# Run db_bench once; prints "ops/s dev_read_bytes dev_written_bytes cpu_seconds". With more
# than one read thread, or a paced writer, the read benchmark runs as a second process after
# the fill (--use_existing_db), since db_bench's --threads and --benchmark_write_rate_limit
# apply to every benchmark of a process.
run_db_bench() {
    rm -rf "$WORK/db_bench"
    local ri=0 wo=0 cpu=0 i o u s rate=0
    [[ $DB_LINE == readwhilewriting ]] && rate=$((WRITE_RATE * (16 + VALUE_SIZE)))
    local -a runs=("$DB_BENCHMARKS 1 0")
    if [[ $PHASE == get && ($THREADS != 1 || $rate != 0) ]]; then
        runs=("${DB_BENCHMARKS%,*} 1 0" "$DB_LINE $THREADS $rate")
    fi
    : >"$WORK/db_bench.out"
    local n=0
    for run in "${runs[@]}"; do
        read -r benchmarks threads limit <<<"$run"
        # shellcheck disable=SC2046
        /usr/bin/time -f '%I %O %U %S' -o "$WORK/time" "$DB_BENCH" $(db_bench_args "$benchmarks" "$BATCH" "$limit") \
            --threads="$threads" --use_existing_db="$(tf $((n > 0)))" >>"$WORK/db_bench.out" 2>&1 ||
            { cat "$WORK/db_bench.out" >&2; exit 1; }
        read -r i o u s <"$WORK/time"
        ri=$((ri + i * 512)) wo=$((wo + o * 512))
        cpu=$(python3 -c "print($cpu + $u + $s)")
        n=$((n + 1))
    done
    local ops
    ops=$(awk -v b="$DB_LINE" '$1 == b && $2 == ":" { for (i = 1; i <= NF; i++) if ($i == "ops/sec") print $(i - 1) }' \
        "$WORK/db_bench.out")
    echo "$ops $ri $wo $cpu $(distinct "$WORK/db_bench")"
}

# Distinct keys in the store at DIR (ldb), on the first round only (0 otherwise: untimed, ~1 s).
distinct() {
    if [[ $ROUND != 0 ]]; then echo 0; return; fi
    ldb --db="$1" dump --count_only 2>/dev/null | awk '/^Keys in range:/ {print $4}'
}

# Run kvbench once; prints "ops/s dev_read_bytes dev_written_bytes cpu_seconds harness_share".
run_kvbench() {
    rm -rf "$WORK/kv" "$WORK/out"
    kvbench_scenario "$WORK/scenario.toml" "$PHASES"
    /usr/bin/time -f '%I %O %U %S' -o "$WORK/time" "$KVBENCH" run "$WORK/scenario.toml" --data-dir "$WORK/kv" \
        --plan-dir "$WORK/plans" --out "$WORK/out" --no-progress --format json --keep-data >"$WORK/kv.out" 2>&1 ||
        { cat "$WORK/kv.out" >&2; exit 1; }
    read -r ri wo u s <"$WORK/time"
    local keys
    keys=$(distinct "$(dirname "$(find "$WORK/kv" -name CURRENT | head -1)")")
    python3 - "$WORK/out" "$PHASE" "$((ri * 512))" "$((wo * 512))" "$u" "$s" "$keys" <<'EOF'
import glob, json, sys
out, phase, ri, wo, u, s, keys = sys.argv[1:]
run = json.load(open(glob.glob(out + "/*.json")[0]))
p = [p for p in run["engines"][0]["phases"] if p["name"] == phase][0]
print(p["ops_per_sec"], ri, wo, float(u) + float(s), keys, p["harness_share"])
EOF
}

# The two OPTIONS files RocksDB wrote, diffed (only the lines that differ).
options_diff() {
    local keep=$RECORDS
    RECORDS=10000
    define filluniquerandom
    rm -rf "$WORK/db_bench"
    # shellcheck disable=SC2046
    "$DB_BENCH" $(db_bench_args filluniquerandom 1) >/dev/null 2>&1
    kvbench_scenario "$WORK/scenario.toml" "$PHASES"
    "$KVBENCH" run "$WORK/scenario.toml" --data-dir "$WORK/kv" --plan-dir "$WORK/plans" --out "$WORK/out" \
        --no-progress --keep-data >/dev/null 2>&1
    local a b
    a=$(ls "$WORK"/db_bench/OPTIONS-* | tail -1)
    b=$(find "$WORK/kv" -name 'OPTIONS-*' | sort | tail -1)
    echo "== OPTIONS: db_bench (<) against kvbench's rocksdb row (>), lines that differ"
    diff <(grep -v '^#' "$a" | sed 's/^ *//' | sort) <(grep -v '^#' "$b" | sed 's/^ *//' | sort) | grep '^[<>]' || true
    rm -rf "$WORK/kv" "$WORK/out" "$WORK/db_bench"
    RECORDS=$keep
}

# Every benchmark named is known and matched before anything runs.
for b in $BENCHES; do (define "$b") || exit 1; done
[[ $OPTIONS == 1 ]] && options_diff
# shellcheck source=bench/db_bench_budget.sh
[[ -n $BUDGET ]] && source bench/db_bench_budget.sh

echo "== db_bench $("$DB_BENCH" --version 2>&1 | head -1 | awk '{print $3}') beside kvbench's rocksdb row:" \
    "$RECORDS records, key 16 B, value $VALUE_SIZE B, cache $CACHE, $COMPRESSION (db_bench" \
    "compression_ratio $COMPRESSION_RATIO), WAL $WAL, sync $SYNC," \
    "read threads $THREADS, pipelined $PIPELINED, direct $DIRECT, statistics $STATISTICS; $ROUNDS rounds, alternated"
[[ -z $BUDGET ]] && printf '%-22s %9s %9s %6s %8s %8s %8s %8s %8s %8s %7s  %s\n' benchmark db_bench kvbench ratio \
    db_w/op kv_w/op db_r/op kv_r/op db_cpu kv_cpu harness 'work: distinct keys db_bench / kvbench, MB of keys and values each'

[[ -n $BUDGET ]] && printf '%s\n%-22s %9s %9s %6s %8s %8s %6s %8s %8s %6s %8s %8s\n' \
    "under a $BUDGET memory cgroup each ($CG_VERSION), phase by phase; bytes per record" \
    benchmark:phase db_bench kvbench ratio db_w/op kv_w/op ratio db_r/op kv_r/op ratio db_cpu kv_cpu
for bench in $BENCHES; do
    define "$bench"
    if [[ -n $BUDGET ]]; then
        budget_bench "$bench"
        continue
    fi
    : >"$WORK/db.txt"
    : >"$WORK/kv.txt"
    for ((r = 0; r < ROUNDS; r++)); do
        ROUND=$r
        if ((r % 2 == 0)); then
            run_db_bench >>"$WORK/db.txt"
            run_kvbench >>"$WORK/kv.txt"
        else
            run_kvbench >>"$WORK/kv.txt"
            run_db_bench >>"$WORK/db.txt"
        fi
    done
    # Ops in each process (for bytes per op): the load plus the compared phase.
    ops=$RECORDS
    [[ $DB_BENCHMARKS == *,* ]] && ops=$((2 * RECORDS))
    python3 - "$bench" "$ops" "$WORK/db.txt" "$WORK/kv.txt" "$VALUE_SIZE" "$DB_BENCHMARKS" <<'EOF'
import statistics as st, sys
bench, ops, db, kv, value = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], int(sys.argv[5])
# Writes of each side: the load, and for overwrite as many updates (a paced writer's are not counted).
writes = ops if bench.startswith("overwrite") else ops // 2 if "," in sys.argv[6] else ops
rows = lambda f: [list(map(float, l.split())) for l in open(f) if l.strip()]
d, k = rows(db), rows(kv)
med = lambda rs, i: st.median(r[i] for r in rs)
ratios = sorted(b[0] / a[0] for a, b in zip(d, k))
print(f"{bench:<22} {med(d, 0):9.0f} {med(k, 0):9.0f} {st.median(ratios):6.3f} "
      f"{med(d, 2) / ops:8.1f} {med(k, 2) / ops:8.1f} {med(d, 1) / ops:8.1f} {med(k, 1) / ops:8.1f} "
      f"{med(d, 3) * 1e6 / ops:8.2f} {med(k, 3) * 1e6 / ops:8.2f} {med(k, 5):7.3f}  "
      f"keys {d[0][4]:.0f} / {k[0][4]:.0f}{'' if d[0][4] == k[0][4] else ' UNMATCHED'}, "
      f"{writes * (16 + value) / 1e6:.0f} MB each  "
      f"ratios {' '.join(f'{x:.3f}' for x in ratios)}")
EOF
done
