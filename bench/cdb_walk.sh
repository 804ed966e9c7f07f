#!/usr/bin/env bash
# Article 003's TinyCDB "100 AllKey Read" as the article ran it, beside kvbench's cell: kvbench
# builds the article's put_add file (the dictionary written 100 times, every copy kept) and
# reads every record 100 times with a get per key (phase read-all-100x, the report's cell);
# bench/cdb_walk.c then walks that same file 100 times with TinyCDB's cdb_seqinit/cdb_seqnext,
# opening it for each pass, as the article's `load` + `each` loop did (every copy, in file order).
# Rounds alternate the two. Prints per round kvbench's cell and the walk's seconds, and the
# median of each.
#
# Usage: bench/cdb_walk.sh   (ROUNDS=3 RECORDS=3500 PASSES=100 DATA=/var/tmp
#   KVBENCH=target/release/kvbench)
# Needs target/release/kvbench, a C compiler, libcdb-dev, python3.
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-3}
RECORDS=${RECORDS:-3500}
PASSES=${PASSES:-100}
DATA=${DATA:-/var/tmp}
KVBENCH=${KVBENCH:-$PWD/target/release/kvbench}

[[ -x $KVBENCH ]] || { echo "$KVBENCH missing: cargo build --release -p kvbench" >&2; exit 1; }
for b in cc python3; do command -v "$b" >/dev/null || { echo "$b missing" >&2; exit 1; }; done
WORK=$(mktemp -d "$DATA/kvbench-cdb-walk.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
cc -O2 -o "$WORK/cdb_walk" bench/cdb_walk.c -lcdb

cat >"$WORK/walk.toml" <<TOML
# The put_add build of article-003-dictionary.toml and its all-key read, alone.
name = "cdb-walk"
seed = 3
sync = "none"
[dataset]
generator = "dictionary"
records = $RECORDS
[[phase]]
name = "load"
kind = "load"
distribution = "sequential"
batch = 1
passes = $PASSES
[[phase]]
name = "read-all-100x"
kind = "get"
distribution = "sequential"
passes = $PASSES
[[engine]]
name = "tinycdb"
label = "tinycdb-put_add"
options = { put = "add" }
expect = "mismatch"
TOML

# Seconds of a phase of the result in directory $1.
phase_s() {
    python3 - "$1" "$2" <<'PY'
import glob, json, sys
f = sorted(glob.glob(sys.argv[1] + "/**/*.json", recursive=True))[-1]
r = json.load(open(f))
p = [p for e in r["engines"] for p in e["phases"] if p["name"] == sys.argv[2]][0]
print(f"{p['elapsed_ns'] / 1e9:.3f}")
PY
}

kv=() walk=()
for round in $(seq 1 "$ROUNDS"); do
    rm -rf "$WORK/data" "$WORK/out"
    "$KVBENCH" run "$WORK/walk.toml" --yes --no-progress --keep-data --data-dir "$WORK/data" \
        -o "$WORK/out" >"$WORK/run.log" 2>&1 || { cat "$WORK/run.log" >&2; exit 1; }
    cdb=$(find "$WORK/data" -name db.cdb | head -1)
    [[ -n $cdb ]] || { echo "no db.cdb under $WORK/data" >&2; exit 1; }
    k=$(phase_s "$WORK/out" read-all-100x)
    w=$("$WORK/cdb_walk" "$cdb" "$PASSES")
    kv+=("$k") walk+=("$(awk '{print $6}' <<<"$w")")
    echo "round $round: kvbench read-all-100x (get per key) ${k} s; walk: $w; load $(cut -d' ' -f1 /proc/loadavg)"
done
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }
echo "median: kvbench get per key $(median "${kv[@]}") s, cdb_seqnext walk $(median "${walk[@]}") s ($ROUNDS rounds)"
