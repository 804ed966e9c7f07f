#!/usr/bin/env bash
# The reference suites beside their authors' own tools, at a reduced size, alternated round after
# round: for each suite and phase the median of each tool, the ratio kvbench / author, and whether
# the engines rank alike. One function per suite; run all of them or name some:
#   bench/ref-suites.sh [pebble_ycsb] [redb] [dbbench]
#
# pebble_ycsb: kvbench's go-pebble row of scenarios/ref-pebble-ycsb.toml beside `pebble bench ycsb`
#   (cmd/pebble v1.1.5, built from the Go module proxy with `go install`), run as the nightly runs
#   it: a load of RECORDS keys in 1 MiB batches (`--initial-keys`, timed around the process), then
#   each mix from a copy of the loaded store (the nightly's tar) with --prepopulated-keys, --keys
#   zipf (uniform for D), --values 64, --cache 4 GiB, --concurrency 1, pebble.Sync commits (no
#   --disable-wal), and RECORDS operations (--num-ops, no --duration). Ratio: ops/s kvbench over
#   ops/s cmd/pebble. cmd/pebble measures Pebble alone: there is no ranking to compare.
# redb: the rows of scenarios/ref-redb.toml at the library versions redb's harness measures
#   (redb2 and fjall2 as its redb and fjall; lmdb, rocksdb; REDB_ROWS names others, e.g.
#   "redb,lmdb,rocksdb,fjall" for the current redb 4 and fjall 3) beside redb's
#   `lmdb_benchmark` (benches/ of the crates.io package redb
#   2.6.3, the last release that ships its harness; REDB_CHECKOUT=DIR runs a checkout's
#   crates/redb-bench-compare harness instead), its counts set to kvbench's at RECORDS: the bulk
#   load RECORDS, the reads 0.19604 and the range reads 0.09802 of the records in the store.
#   Ratio: phase time kvbench over harness time (sizes: bytes over bytes); ranking: the engines
#   ordered by each tool's median, per phase. The harness's RocksDB is kvbench's (REDB_ROCKSDB=debian,
#   the default): rust-rocksdb 0.20.1 over Debian's librocksdb 7.8.3, its one API change
#   (new_lru_cache returns a Result) unwrapped, and compression set to none, what the published
#   harness gets (its rust-rocksdb 0.22 is built with lz4 only, and RocksDB defaults to Snappy
#   only when linked with it). REDB_ROCKSDB=bundled keeps the published rust-rocksdb 0.22.
#
# Usage: ROUNDS=3 RECORDS=20000 DATA=/var/tmp KVBENCH=target/release/kvbench bench/ref-suites.sh
#   (RAW=FILE appends every round's figures, "round tool engine phase value", to FILE)
#   Needs go (pebble_ycsb), cargo with crates.io access, clang (redb; with REDB_ROCKSDB=bundled
#   also a C++ compiler: rust-rocksdb 0.22 builds RocksDB 8.10 from source, once, into TOOLS, an
#   hour on two busy cores; Debian's librocksdb 7.8 lacks C functions it calls, e.g.
#   rocksdb_write_buffer_manager_destroy), python3, and the Go worker built (make go;
#   KVBENCH_GO_WORKER may name another build of go-pebble).
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-3}
RECORDS=${RECORDS:-20000}
# Absolute: cmd/pebble runs in WORK (it writes its profiles, cpu.*.prof and the rest, where it runs).
DATA=$(realpath -m "${DATA:-/var/tmp}")
KVBENCH=${KVBENCH:-target/release/kvbench}
TOOLS=${TOOLS:-$DATA/kvbench-ref-tools}
WORK=$(mktemp -d "$DATA/ref-suites.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
mkdir -p "$TOOLS"
[[ -x $KVBENCH ]] || { echo "$KVBENCH missing: cargo build --release" >&2; exit 1; }

# kvbench's result file of one run of SCENARIO on ENGINES at RECORDS records (the path printed).
kvbench_run() {
    local scenario=$1 engines=$2 out=$WORK/kv-out
    rm -rf "$WORK/kv" "$out"
    "$KVBENCH" run "$scenario" --engines "$engines" --records "$RECORDS" --data-dir "$WORK/kv" \
        --plan-dir "$WORK/plans" --out "$out" --no-progress --format json >"$WORK/kv.log" 2>&1 ||
        { cat "$WORK/kv.log" >&2; exit 1; }
    ls "$out"/*.json | head -1
}

# Medians, ratios and rankings of the lines "round tool engine phase value" in FILE; LOWER=1
# when a smaller value is better (times, sizes). Two engines are in a tool's order only when
# every round of one beats every round of the other (their ranges do not overlap); an order the
# tool's own rounds do not keep is a tie. A phase's rankings agree when the medians rank alike;
# where they do not, each pair they order differently is named: a disagreement when each tool's
# rounds keep its order, "within noise" when one tool's rounds tie the pair.
report() {
    [[ -n ${RAW:-} ]] && cat "$1" >>"$RAW"
    python3 - "$1" "$2" <<'EOF'
import itertools, statistics, sys
from collections import defaultdict
path, lower = sys.argv[1], sys.argv[2] == "1"
vals = defaultdict(list)
phases, engines = [], []
for line in open(path):
    _, tool, engine, phase, value = line.split("\t")
    vals[tool, engine, phase].append(float(value) * (1 if lower else -1))
    if phase not in phases: phases.append(phase)
    if engine not in engines: engines.append(engine)
med = {k: statistics.median(v) for k, v in vals.items()}
def rank(tool, phase):
    return sorted((e for e in engines if (tool, e, phase) in med), key=lambda e: med[tool, e, phase])
def order(tool, phase, a, b):
    """-1: a before b in every round, 1: b before a, 0: the rounds overlap (a tie)."""
    va, vb = vals[tool, a, phase], vals[tool, b, phase]
    return -1 if max(va) < min(vb) else 1 if max(vb) < min(va) else 0
def verdict(phase):
    """The pairs whose medians the two tools order differently: each either ordered both ways
    by the rounds (a disagreement) or tied in one tool's rounds (noise)."""
    es = [e for e in engines if ("author", e, phase) in med and ("kvbench", e, phase) in med]
    differ, noise = [], []
    for a, b in itertools.combinations(es, 2):
        ma, mk = (med[t, a, phase] < med[t, b, phase] for t in ("author", "kvbench"))
        if ma == mk:
            continue
        oa, ok = order("author", phase, a, b), order("kvbench", phase, a, b)
        if oa and ok:
            differ.append(f"{a}/{b}")
        else:
            tied = "both" if not oa and not ok else "author" if not oa else "kvbench"
            noise.append(f"{a}~{b} ({tied} tied)")
    if differ:
        return "DIFFER: " + ", ".join(differ)
    return "agree within noise: " + ", ".join(noise) if noise else "agree"
print(f"{'phase':<26} {'engine':<10} {'author':>12} {'kvbench':>12} {'ratio':>6}  ranking (author | kvbench)")
sign = 1 if lower else -1
for p in phases:
    ra, rk = rank("author", p), rank("kvbench", p)
    v = verdict(p)
    for i, e in enumerate(engines):
        a, k = med.get(("author", e, p)), med.get(("kvbench", e, p))
        if a is None or k is None: continue
        ratio = f"{k / a:6.2f}" if a else "     -"
        tail = f"  {v}: {' > '.join(ra)} | {' > '.join(rk)}" if i == 0 and len(ra) > 1 else ""
        print(f"{p:<26} {e:<10} {sign * a:>12.1f} {sign * k:>12.1f} {ratio}{tail}")
EOF
}

# ---- pebble_ycsb -------------------------------------------------------------------------------

pebble_bin() {
    local bin=$TOOLS/bin/pebble
    if [[ ! -x $bin ]]; then
        echo "building cmd/pebble v1.1.5 from the Go module proxy into $TOOLS/bin" >&2
        GOBIN=$TOOLS/bin GOFLAGS=-mod=mod go install github.com/cockroachdb/pebble/cmd/pebble@v1.1.5 >&2
    fi
    echo "$bin"
}

# One round of cmd/pebble: the load timed around its process, then each mix from the loaded copy.
pebble_round() {
    local round=$1 bin=$2 dir=$WORK/pebble common
    common=(--concurrency=1 --values=64 --cache=4294967296 -d 0)
    rm -rf "$dir" "$dir.loaded"
    local t0 t1
    t0=$(date +%s.%N)
    (cd "$WORK" && "$bin" bench ycsb "$dir" --wipe --workload=read=100 --initial-keys="$RECORDS" --num-ops=1 \
        "${common[@]}") >"$WORK/pebble.log" 2>&1 || { cat "$WORK/pebble.log" >&2; exit 1; }
    t1=$(date +%s.%N)
    printf '%s\tauthor\tgo-pebble\tload\t%s\n' "$round" "$(python3 -c "print($RECORDS / ($t1 - $t0))")"
    cp -a "$dir" "$dir.loaded"
    for w in A B C D E F; do
        local keys=zipf
        [[ $w == D ]] && keys=uniform
        rm -rf "$dir" && cp -a "$dir.loaded" "$dir"
        (cd "$WORK" && "$bin" bench ycsb "$dir" --workload="$w" --keys="$keys" --initial-keys=0 \
            --prepopulated-keys="$RECORDS" --num-ops="$RECORDS" "${common[@]}") >"$WORK/pebble.log" 2>&1 ||
            { cat "$WORK/pebble.log" >&2; exit 1; }
        awk -v r="$round" -v w="$w" '/^Benchmarkycsb\// {print r "\tauthor\tgo-pebble\t" w "\t" $3}' "$WORK/pebble.log"
    done
}

kvbench_pebble_round() {
    local file
    file=$(kvbench_run scenarios/ref-pebble-ycsb.toml go-pebble)
    python3 - "$file" "$1" <<'EOF'
import json, sys
run = json.load(open(sys.argv[1]))
for p in run["engines"][0]["phases"]:
    if p["name"] in ("load", "A", "B", "C", "D", "E", "F"):
        # cmd/pebble counts a scan as one operation; kvbench's ops of a scan are its records.
        rate = p["ops_per_sec"] * (p["requests"] / p["ops"] if p["name"] == "E" and p["ops"] else 1)
        print(f"{sys.argv[2]}\tkvbench\tgo-pebble\t{p['name']}\t{rate}")
EOF
}

pebble_ycsb() {
    local bin lines=$WORK/pebble.tsv
    bin=$(pebble_bin)
    : >"$lines"
    for round in $(seq "$ROUNDS"); do
        if ((round % 2)); then
            pebble_round "$round" "$bin" >>"$lines"
            kvbench_pebble_round "$round" >>"$lines"
        else
            kvbench_pebble_round "$round" >>"$lines"
            pebble_round "$round" "$bin" >>"$lines"
        fi
    done
    echo "== ref-pebble-ycsb: go-pebble in kvbench beside cmd/pebble v1.1.5 ycsb, $RECORDS records, ops/s," \
        "median of $ROUNDS alternated rounds (ratio kvbench / cmd/pebble)"
    report "$lines" 0
}

# ---- redb --------------------------------------------------------------------------------------

# The harness's source tree: REDB_CHECKOUT's crates/redb-bench-compare, else crates.io's redb
# 2.6.3 (fetched by cargo from a throwaway manifest and unpacked from cargo's cache).
redb_harness_src() {
    if [[ -n ${REDB_CHECKOUT:-} ]]; then
        echo "$REDB_CHECKOUT"
        return
    fi
    local src=$TOOLS/redb-2.6.3
    if [[ ! -d $src ]]; then
        local m=$TOOLS/fetch-redb
        mkdir -p "$m/src"
        printf '[package]\nname = "fetch-redb"\nversion = "0.0.0"\nedition = "2021"\npublish = false\n[dependencies]\nredb = "=2.6.3"\n[workspace]\n' >"$m/Cargo.toml"
        echo 'fn main() {}' >"$m/src/main.rs"
        (cd "$m" && cargo fetch -q)
        tar xzf "$(ls "${CARGO_HOME:-$HOME/.cargo}"/registry/cache/*/redb-2.6.3.crate | head -1)" -C "$TOOLS"
        rm -f "$src/rust-toolchain" # its pinned 1.85 toolchain: the installed one builds it
    fi
    echo "$src"
}

REDB_ROCKSDB=${REDB_ROCKSDB:-debian}

# cargo for the harness: over Debian's librocksdb (REDB_ROCKSDB=debian) or its bundled build;
# NICE prefixes the command (the build runs at nice 19: the machine may be measuring).
redb_cargo() {
    if [[ $REDB_ROCKSDB == debian ]]; then
        ROCKSDB_LIB_DIR=/usr/lib/x86_64-linux-gnu SNAPPY_LIB_DIR=/usr/lib/x86_64-linux-gnu \
            CARGO_TARGET_DIR=$TOOLS/redb-target-deb ${NICE:-} cargo "$@"
    else
        env -u ROCKSDB_LIB_DIR -u SNAPPY_LIB_DIR CARGO_TARGET_DIR=$TOOLS/redb-target ${NICE:-} cargo "$@"
    fi
}

# The harness's RocksDB made kvbench's (REDB_ROCKSDB=debian): rust-rocksdb 0.20.1, the cache's
# Result unwrapped, compression none as the published build has it (see the head of this file).
redb_rocksdb_debian() {
    local copy=$1 bench=$2
    sed -i -e '/dev-dependencies.rocksdb\]/,/^version/s/^version = .*/version = "=0.20.1"/' "$copy/Cargo.toml"
    sed -i -e 's/rocksdb::Cache::new_lru_cache(CACHE_SIZE))/rocksdb::Cache::new_lru_cache(CACHE_SIZE).unwrap())/' \
        -e 's/^\( *\)opts.create_if_missing(true);/&\n\1opts.set_compression_type(rocksdb::DBCompressionType::None);/' "$bench"
    grep -q 'set_compression_type(rocksdb::DBCompressionType::None)' "$bench" ||
        { echo "$bench: the RocksDB options were not found to edit" >&2; exit 1; }
}

# The harness with its counts set to kvbench's at RECORDS, built; prints the command to run it.
redb_harness() {
    local src bench store=$((RECORDS + 101000))
    src=$(redb_harness_src)
    bench=$(find "$src" -path '*benches/lmdb_benchmark.rs' | head -1)
    local copy=$TOOLS/harness-$RECORDS
    rm -rf "$copy" && cp -a "$src" "$copy"
    local b=${bench#"$src"/}
    local lib=$copy/$b
    [[ -f $copy/crates/redb-bench/src/lib.rs ]] && lib=$copy/crates/redb-bench/src/lib.rs
    sed -i -e "s/^const BULK_ELEMENTS: usize = .*/const BULK_ELEMENTS: usize = $RECORDS;/" \
        -e "s/^const NUM_READS: usize = .*/const NUM_READS: usize = $(python3 -c "print(round(0.19604 * $store))");/" \
        -e "s/^const NUM_SCANS: usize = .*/const NUM_SCANS: usize = $(python3 -c "print(round(0.09802 * $store))");/" "$lib"
    [[ $REDB_ROCKSDB == debian ]] && redb_rocksdb_debian "$copy" "$copy/$b"
    (cd "$copy" && NICE="nice -n 19" redb_cargo bench -q --bench lmdb_benchmark --no-run >&2)
    echo "$copy"
}

# One run of the harness: its table's rows for the engines kvbench also runs, as lines.
redb_round() {
    local round=$1 copy=$2
    (cd "$copy" && redb_cargo bench -q --bench lmdb_benchmark >"$WORK/redb.log" 2>&1) ||
        { cat "$WORK/redb.log" >&2; exit 1; }
    python3 - "$WORK/redb.log" "$round" <<'EOF'
import re, sys
from collections import Counter
lines = [l for l in open(sys.argv[1]) if l.startswith("|")]
head = [c.strip() for c in lines[0].strip().strip("|").split("|")]
seen = Counter()
def value(c):
    c = c.strip().strip("*")
    m = re.match(r"([\d.]+)\s*(ms|B|KiB|MiB|GiB)$", c)
    if not m: return None
    n, u = float(m[1]), m[2]
    return n if u == "ms" else n * {"B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30}[u]
for l in lines[2:]:
    cells = [c.strip() for c in l.strip().strip("|").split("|")]
    name = cells[0]
    seen[name] += 1
    if seen[name] > 1: name += " again"
    for engine, c in zip(head[1:], cells[1:]):
        v = value(c)
        if engine in ("redb", "lmdb", "rocksdb", "fjall") and v is not None:
            print(f"{sys.argv[2]}\tauthor\t{engine}\t{name}\t{v}")
EOF
}

REDB_ROWS=${REDB_ROWS:-redb2,lmdb,rocksdb,fjall2}

# One kvbench run of REDB_ROWS, as lines; a row of another version is named as the harness
# names its engine (redb2 is redb).
kvbench_redb_round() {
    local file
    file=$(kvbench_run scenarios/ref-redb.toml "$REDB_ROWS")
    python3 - "$file" "$1" <<'EOF'
import json, re, sys
names = {"batch writes": "batch writes", "random reads 4 threads": "random reads (4 threads)",
         "random reads 8 threads": "random reads (8 threads)", "random reads 16 threads": "random reads (16 threads)",
         "random reads 32 threads": "random reads (32 threads)"}
run = json.load(open(sys.argv[1]))
for e in run["engines"]:
    engine = re.sub(r"2$", "", e["engine"])
    for p in e["phases"]:
        name = names.get(p["name"], p["name"])
        ns = p.get("wall_ns") or p.get("elapsed_ns")
        if ns and p["kind"] != "settle":
            print(f"{sys.argv[2]}\tkvbench\t{engine}\t{name}\t{ns / 1e6}")
        if p["name"] in ("removals", "compaction") and p.get("disk"):
            size = "uncompacted size" if p["name"] == "removals" else "compacted size"
            print(f"{sys.argv[2]}\tkvbench\t{engine}\t{size}\t{p['disk'].get('file_bytes', 0)}")
EOF
}

redb() {
    local copy lines=$WORK/redb.tsv
    copy=$(redb_harness)
    : >"$lines"
    for round in $(seq "$ROUNDS"); do
        if ((round % 2)); then
            redb_round "$round" "$copy" >>"$lines"
            kvbench_redb_round "$round" >>"$lines"
        else
            kvbench_redb_round "$round" >>"$lines"
            redb_round "$round" "$copy" >>"$lines"
        fi
    done
    echo "== ref-redb: kvbench's $REDB_ROWS beside redb's lmdb_benchmark ($(basename "$(redb_harness_src)"), RocksDB $REDB_ROCKSDB), $RECORDS records," \
        "ms (sizes in bytes), median of $ROUNDS alternated rounds (ratio kvbench / harness)"
    report "$lines" 1
}

# ---- dbbench -----------------------------------------------------------------------------------

# dbbench: kvbench's rocksdb row of scenarios/ref-dbbench.toml beside db_bench (Debian's
#   rocksdb-tools 7.8.3, the same librocksdb) run as benchmark.sh runs it: one db_bench process
#   per test on the files the one before left, each with benchmark.sh's params_w flags, in
#   benchmark_compare.sh's order (fillseq_disable_wal, readrandom, fwdrange, flush_mt_l0,
#   fwdrangewhilewriting, readwhilewriting, overwrite) at DB_RECORDS keys for DB_DURATION s a
#   test; db_bench's fillseq_enable_wal runs too (kvbench's fillseq writes the WAL). Matched to
#   the scenario: the 1 GiB block cache, and values of --compression_ratio=DB_RATIO (1: random
#   characters, as kvbench's printable values; benchmark.sh's 0.5 compresses to half).
#   Ratio: ops/s kvbench over ops/s db_bench (scans: seeks, as db_bench counts them); ranking:
#   the phases ordered by each tool's ops/s. Round 1 also prints the OPTIONS lines that differ.
DB_RECORDS=${DB_RECORDS:-200000}
DB_DURATION=${DB_DURATION:-10}
DB_RATIO=${DB_RATIO:-1}
DB_BENCH=${DB_BENCH:-/usr/bin/db_bench}

# benchmark.sh's const_params_base, level_const_params, l0_config and params_w at DB_RECORDS.
dbbench_params() {
    local M=$((1 << 20))
    echo --db="$WORK/dbb" --wal_dir="$WORK/dbb" --num="$DB_RECORDS" --key_size=20 --value_size=400 \
        --block_size=8192 --cache_size=$((1 << 30)) --cache_numshardbits=6 --compression_max_dict_bytes=0 \
        --compression_ratio="$DB_RATIO" --compression_type=zstd --bytes_per_sync=$((8 * M)) \
        --benchmark_write_rate_limit=0 --write_buffer_size=$((128 * M)) --target_file_size_base=$((128 * M)) \
        --max_bytes_for_level_base=$((1024 * M)) --verify_checksum=1 --delete_obsolete_files_period_micros=$((60 * M)) \
        --max_bytes_for_level_multiplier=8 --statistics=0 --stats_per_interval=1 --stats_interval_seconds=60 \
        --report_interval_seconds=5 --histogram=1 --memtablerep=skip_list --bloom_bits=10 --open_files=-1 \
        --subcompactions=1 --compaction_style=0 --num_levels=8 --min_level_to_compress=-1 \
        --level_compaction_dynamic_level_bytes=true --pin_l0_filter_and_index_blocks_in_cache=1 \
        --level0_file_num_compaction_trigger=4 --level0_slowdown_writes_trigger=20 --level0_stop_writes_trigger=30 \
        --max_background_jobs=16 --max_write_buffer_number=8 --seed=$((RANDOM + 1))
}

# One db_bench process (benchmark.sh's run_*): round, the name in the table, the result line's
# name (- for none), then the test's own flags (later flags win, as in benchmark.sh); prints
# "round author rocksdb NAME ops/s".
dbbench_test() {
    local round=$1 name=$2 line=$3
    shift 3
    # shellcheck disable=SC2046
    "$DB_BENCH" $(dbbench_params) "$@" >"$WORK/dbb.log" 2>&1 || { cat "$WORK/dbb.log" >&2; exit 1; }
    [[ $line == - ]] && return
    awk -v r="$round" -v n="$name" -v l="$line" '$1 == l && $2 == ":" {print r "\tauthor\trocksdb\t" n "\t" $5}' "$WORK/dbb.log"
}

dbbench_round() {
    local r=$1 d=--duration=$DB_DURATION w=--benchmark_write_rate_limit=$((2 << 20))
    local fill=(--use_existing_db=0 --sync=0 --threads=1 --memtablerep=vector --allow_concurrent_memtable_write=false
        --min_level_to_compress=0)
    rm -rf "$WORK/dbb"
    dbbench_test "$r" fillseq_enable_wal fillseq --benchmarks=fillseq "${fill[@]}" --disable_wal=0
    rm -rf "$WORK/dbb"
    dbbench_test "$r" fillseq fillseq --benchmarks=fillseq "${fill[@]}" --disable_wal=1
    dbbench_test "$r" readrandom readrandom --benchmarks=readrandom --use_existing_db=1 --threads=16 "$d"
    dbbench_test "$r" fwdrange seekrandom --benchmarks=seekrandom --use_existing_db=1 --threads=16 --seek_nexts=10 \
        --reverse_iterator=false "$d"
    dbbench_test "$r" settle - --use_existing_db=1 --sync=0 --threads=1 \
        --benchmarks=levelstats,flush,waitforcompaction,compact0,waitforcompaction,memstats,levelstats
    dbbench_test "$r" fwdrangewhilewriting seekrandomwhilewriting --benchmarks=seekrandomwhilewriting \
        --use_existing_db=1 --sync=0 --threads=16 --merge_operator=put --seek_nexts=10 --reverse_iterator=false "$w" "$d"
    dbbench_test "$r" readwhilewriting readwhilewriting --benchmarks=readwhilewriting --use_existing_db=1 --sync=0 \
        --threads=16 --merge_operator=put "$w" "$d"
    dbbench_test "$r" overwrite overwrite --benchmarks=overwrite --use_existing_db=1 --sync=0 --threads=16 \
        --merge_operator=put "$d"
}

kvbench_dbbench_round() {
    local out=$WORK/kv-out
    rm -rf "$WORK/kv" "$out"
    "$KVBENCH" run scenarios/ref-dbbench.toml --engines rocksdb --records "$DB_RECORDS" --duration "${DB_DURATION}s" \
        --data-dir "$WORK/kv" --plan-dir "$WORK/plans" --out "$out" --no-progress --format json --keep-data \
        >"$WORK/kv.log" 2>&1 || { cat "$WORK/kv.log" >&2; exit 1; }
    python3 - "$(ls "$out"/*.json | head -1)" "$1" <<'EOF'
import json, sys
run = json.load(open(sys.argv[1]))
for p in run["engines"][0]["phases"]:
    if p["kind"] in ("load", "get", "scan", "update") and p["ops"]:
        rate = p["ops_per_sec"] * p["requests"] / p["ops"]
        print(f"{sys.argv[2]}\tkvbench\trocksdb\t{p['name']}\t{rate}")
EOF
}

# The OPTIONS lines of db_bench's store and kvbench's that differ (after a round of each).
dbbench_options() {
    local a b
    a=$(ls "$WORK"/dbb/OPTIONS-* | sort | tail -1)
    b=$(find "$WORK/kv" -name 'OPTIONS-*' | sort | tail -1)
    echo "== OPTIONS that differ: db_bench (<), kvbench's rocksdb row (>)"
    diff <(grep -v '^#' "$a" | sed 's/^ *//' | sort) <(grep -v '^#' "$b" | sed 's/^ *//' | sort) | grep '^[<>]' || true
}

# Per phase: each tool's median, the ratio, and the phases ranked by ops/s in each tool.
dbbench_report() {
    [[ -n ${RAW:-} ]] && cat "$1" >>"$RAW"
    python3 - "$1" <<'EOF'
import statistics, sys
from collections import defaultdict
vals, phases = defaultdict(list), []
for line in open(sys.argv[1]):
    _, tool, _, phase, value = line.rstrip("\n").split("\t")
    vals[tool, phase].append(float(value))
    if phase not in phases: phases.append(phase)
med = {k: statistics.median(v) for k, v in vals.items()}
print(f"{'phase':<22} {'db_bench':>12} {'kvbench':>12} {'ratio':>6}")
for p in phases:
    a = med.get(("author", p))
    k = med.get(("kvbench", "fillseq" if p == "fillseq_enable_wal" else p))
    if a and k:
        print(f"{p:<22} {a:>12.0f} {k:>12.0f} {k / a:6.2f}")
both = [p for p in phases if ("author", p) in med and ("kvbench", p) in med]
rank = lambda tool: sorted(both, key=lambda p: -med[tool, p])
ra, rk = rank("author"), rank("kvbench")
print(f"ranking by ops/s {'agrees' if ra == rk else 'DIFFERS'}: db_bench {' > '.join(ra)}; kvbench {' > '.join(rk)}")
EOF
}

dbbench() {
    local lines=$WORK/dbbench.tsv
    [[ -x $DB_BENCH ]] || { echo "$DB_BENCH missing: make deps (rocksdb-tools)" >&2; exit 1; }
    : >"$lines"
    for round in $(seq "$ROUNDS"); do
        if ((round % 2)); then
            dbbench_round "$round" >>"$lines"
            kvbench_dbbench_round "$round" >>"$lines"
        else
            kvbench_dbbench_round "$round" >>"$lines"
            dbbench_round "$round" >>"$lines"
        fi
        if ((round == 1)); then dbbench_options; fi
    done
    echo "== ref-dbbench: kvbench's rocksdb row beside db_bench 7.8.3 run as benchmark.sh runs it, $DB_RECORDS" \
        "records, $DB_DURATION s a test, ops/s, median of $ROUNDS alternated rounds (ratio kvbench / db_bench;" \
        "fillseq_enable_wal: db_bench with the WAL, beside kvbench's fillseq, which writes it)"
    dbbench_report "$lines"
}

suites=("$@")
[[ ${#suites[@]} == 0 ]] && suites=(pebble_ycsb redb dbbench)
for s in "${suites[@]}"; do
    [[ $(type -t "$s") == function ]] || { echo "unknown suite $s (known: pebble_ycsb redb dbbench)" >&2; exit 1; }
    "$s"
done
