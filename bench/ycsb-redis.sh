#!/usr/bin/env bash
# YCSB's workloads on Redis: the commands each operation sends, as Redis counts them (INFO
# commandstats), for kvbench's ycsb-a/b/c/e (the redis row, `record = "auto"`: a hash per record)
# beside what YCSB's Redis binding sends for the same operations, and with YCSB_HOME, beside
# YCSB itself run on the same server.
#
# YCSB's binding (site.ycsb.db.RedisClient, YCSB 0.17.0): insert = HMSET of the fields, then
# ZADD of the key to `_indices` (score: the key's Java hashCode); update = HMSET of the fields
# given (one, as YCSB's updates write one field by default); read = HGETALL (all fields, YCSB's
# default); scan = ZRANGEBYSCORE on `_indices` from the start key's score, LIMIT 0 N, then one
# HGETALL per key. The "binding" rows are that sequence applied to the operations kvbench ran
# (reads, updates, inserts, scans and the records they visited, from its result file).
#
# The script starts redis-server itself (no persistence) in a private temporary directory, on a
# Unix socket for kvbench and, for YCSB (whose binding speaks TCP only), on 127.0.0.1:$PORT.
# Before each tool's run the server is flushed and its counters reset; the load alone is
# counted first, and the run's counts are the whole minus the load.
#
# Usage: bench/ycsb-redis.sh        (WORKLOADS="a b c e" RECORDS=100000 OPS=100000)
#   YCSB_HOME=/path/to/ycsb-0.17.0  also run YCSB (bin/ycsb, its redis-binding); PORT=6399
#   KVBENCH=/path/to/kvbench        (default target/release/kvbench)
# Needs target/release/kvbench (cargo build --release -p kvbench), redis-server, redis-cli, python3.
set -euo pipefail
cd "$(dirname "$0")/.."
WORKLOADS=${WORKLOADS:-a b c e}
RECORDS=${RECORDS:-100000}
OPS=${OPS:-100000}
PORT=${PORT:-6399}
KVBENCH=${KVBENCH:-$PWD/target/release/kvbench}
WORK=$(mktemp -d /tmp/kvbench-ycsb-redis.XXXXXX)
PIDS=()
cleanup() {
    for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    rm -rf "$WORK"
}
trap cleanup EXIT

[[ -x $KVBENCH ]] || { echo "$KVBENCH missing: cargo build --release -p kvbench" >&2; exit 1; }
for b in redis-server redis-cli python3; do
    command -v "$b" >/dev/null || { echo "$b missing" >&2; exit 1; }
done
if [[ -n ${YCSB_HOME:-} && ! -x $YCSB_HOME/bin/ycsb ]]; then
    echo "YCSB_HOME=$YCSB_HOME has no bin/ycsb" >&2
    exit 1
fi

tcp=(--port 0)
[[ -n ${YCSB_HOME:-} ]] && tcp=(--port "$PORT" --bind 127.0.0.1)
redis-server "${tcp[@]}" --unixsocket "$WORK/redis.sock" --unixsocketperm 700 --save '' \
    --appendonly no --daemonize no --logfile "$WORK/redis.log" &
PIDS+=($!)
for _ in $(seq 100); do
    [[ -S $WORK/redis.sock ]] && break
    sleep 0.1
done
cli() { redis-cli -s "$WORK/redis.sock" "$@"; }

# Reset the server; after CMD, the data commands' calls as "name calls" lines.
counted() {
    cli FLUSHALL >/dev/null
    cli CONFIG RESETSTAT >/dev/null
    "$@"
    cli INFO commandstats | tr -d '\r' |
        sed -n 's/^cmdstat_\([a-z]*\):calls=\([0-9]*\),.*/\1 \2/p' |
        grep -E '^(get|set|mget|del|hset|hmset|hgetall|zadd|zrem|zrangebylex|zrangebyscore) '
}

# kvbench's scenario for workload W on this server (only the load when $2 = load).
scenario() {
    local w=$1 part=${2:-all}
    sed -e "s/^records = 100000/records = $RECORDS/" -e "s/^count = 100000/count = $OPS/" \
        -e '/^engines = /d' "scenarios/ycsb-$w.toml" |
        if [[ $part == load ]]; then awk '/^name = "run"/ {exit} {print}' | sed '$d'; else cat; fi
    printf '\n[[engine]]\nname = "redis"\nurl = "redis+unix://%s"\n' "$WORK/redis.sock"
}

run_kvbench() {
    local w=$1 part=$2
    scenario "$w" "$part" >"$WORK/s.toml"
    rm -rf "$WORK/out"
    "$KVBENCH" run "$WORK/s.toml" --no-progress --format json --out "$WORK/out" --data-dir "$WORK/data" \
        --plan-dir "$WORK/plans" >/dev/null 2>"$WORK/kv.err" || { cat "$WORK/kv.err" >&2; exit 1; }
}

ycsb_props() {
    echo "-P $YCSB_HOME/workloads/workload$1 -p recordcount=$RECORDS -p operationcount=$OPS" \
        "-p redis.host=127.0.0.1 -p redis.port=$PORT"
}

run_ycsb() {
    # shellcheck disable=SC2046
    "$YCSB_HOME/bin/ycsb" load redis -s $(ycsb_props "$1") >"$WORK/ycsb-load.out" 2>&1
    if [[ $2 == all ]]; then
        # shellcheck disable=SC2046
        "$YCSB_HOME/bin/ycsb" run redis -s $(ycsb_props "$1") >"$WORK/ycsb-run.out" 2>&1
    fi
}

echo "redis $(redis-server --version | grep -o 'v=[0-9.]*'), $RECORDS records, $OPS operations"
echo
printf '%-8s %-9s %-44s %s\n' workload tool 'run: commands per operation' 'load: per record'
for w in $WORKLOADS; do
    counted run_kvbench "$w" load >"$WORK/kvbench-load"
    counted run_kvbench "$w" all >"$WORK/kvbench-all"
    cp "$(ls "$WORK"/out/*.json | grep -v /latest.json)" "$WORK/kv.json"
    tools=(kvbench binding)
    if [[ -n ${YCSB_HOME:-} ]]; then
        counted run_ycsb "$w" load >"$WORK/ycsb-load"
        counted run_ycsb "$w" all >"$WORK/ycsb-all"
        tools+=(ycsb)
    fi
    for tool in "${tools[@]}"; do
        python3 - "$w" "$tool" "$WORK" "$RECORDS" "$OPS" <<'EOF'
import base64, json, sys, zlib
w, tool, work, records, ops = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])

def calls(path):
    return {l.split()[0]: int(l.split()[1]) for l in open(path) if l.strip()}

def per(counts, n):
    return ", ".join(f"{k} {v / n:.3f}" for k, v in sorted(counts.items()) if v) or "-"

def hist_count(b64):
    # HdrHistogram V2 compressed: a 4-byte cookie, a 4-byte length, then zlib; the count is
    # the sum of the zig-zag LEB128 counts after the 40-byte header (negative = zero runs).
    raw = base64.b64decode(b64)
    body = zlib.decompress(raw[8:])
    i, total, payload = 40, 0, body[40:]
    j = 0
    while j < len(payload):
        v, shift = 0, 0
        while True:
            b = payload[j]; j += 1
            v |= (b & 0x7F) << shift; shift += 7
            if not b & 0x80 or shift >= 63:
                break
        v = (v >> 1) ^ -(v & 1)
        if v > 0:
            total += v
    return total

r = json.load(open(f"{work}/kv.json"))
run = next(p for p in r["engines"][0]["phases"] if p["name"] == "run")
assert run["status"] == "ok" and run["mismatches"] + run["missing"] + run["errors"] == 0, run["status"]
kinds = {k: hist_count(l["hdr"]) for k, l in run.get("latency_by_op", {}).items()} or {"get": run["requests"]}
reads, updates, inserts, scans = (kinds.get(k, 0) for k in ("get", "update", "insert", "scan"))
n = reads + updates + inserts + scans
if tool == "binding":
    load = {"hmset": records, "zadd": records}
    visited = run["ops"] - inserts if scans else 0
    runc = {"hgetall": reads + visited, "hmset": updates + inserts, "zadd": inserts, "zrangebyscore": scans}
else:
    load, whole = calls(f"{work}/{tool}-load"), calls(f"{work}/{tool}-all")
    runc = {k: v - load.get(k, 0) for k, v in whole.items()}
print(f"{w:<8} {tool:<9} {per(runc, n):<44} {per(load, records)}")
if tool == "kvbench":
    wire = run.get("wire", {})
    print(f"{'':<8} {'':<9} ops: read {reads}, update {updates}, insert {inserts}, scan {scans}; "
          f"wire: {wire.get('commands')} commands, {wire.get('round_trips')} round trips; "
          f"commandstats: {sum(runc.values())} commands")
EOF
    done
done
