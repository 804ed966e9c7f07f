#!/usr/bin/env bash
# Load-generator capacity: kvbench against redis-benchmark and memtier_benchmark driving the
# same server with the same connections and pipeline depth. GET of keys that exist (16-byte
# keys, 32-byte values, uniform over RECORDS keys), one client thread with CONNS connections,
# pipeline depths DEPTHS. For each tool: throughput (GETs over the run's wall clock, as each
# tool prints it) and client CPU per GET (user + sys of the client process: /usr/bin/time for
# the peers; for kvbench the worker's CPU over the get phase, from its result file).
#
# The script starts redis-server and memcached itself on Unix sockets in a private temporary
# directory (no TCP port), without persistence, and gives them to kvbench as the rows' `url`.
# Each tool reads its own keys (key:<12 digits> for redis-benchmark, memtier-<n> for memtier,
# kvb:<12 digits> for kvbench), all loaded before the rounds.
#
# memtier_benchmark is not packaged in Debian 12. To include it, build it outside the
# repository (never commit its code): its sources are github.com/RedisLabs/memtier_benchmark;
# apt-get install autoconf automake libtool libevent-dev libssl-dev zlib1g-dev pkg-config, then
# `autoreconf -ivf && ./configure && make` in the checkout, and point MEMTIER at the binary.
# Without it the memtier rows (and the memcached comparison, which has no other peer) are skipped.
#
# Usage: bench/loadgen.sh          (ROUNDS=5 CONNS=8 DEPTHS="1 16" RECORDS=100000 OPS=1000000)
#   MEMTIER=/path/to/memtier_benchmark   KVBENCH=/path/to/kvbench (default target/release/kvbench)
# Needs target/release/kvbench (cargo build --release -p kvbench), redis-server, redis-cli,
# redis-benchmark, memcached, python3.
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-5}
CONNS=${CONNS:-8}
DEPTHS=${DEPTHS:-1 16}
RECORDS=${RECORDS:-100000}
OPS=${OPS:-1000000}
KVBENCH=${KVBENCH:-$PWD/target/release/kvbench}
MEMTIER=${MEMTIER:-$(command -v memtier_benchmark || true)}
WORK=$(mktemp -d /tmp/kvbench-loadgen.XXXXXX)
PIDS=()
cleanup() {
    for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    rm -rf "$WORK"
}
trap cleanup EXIT

[[ -x $KVBENCH ]] || { echo "$KVBENCH missing: cargo build --release -p kvbench" >&2; exit 1; }
for b in redis-server redis-cli redis-benchmark memcached python3 /usr/bin/time; do
    command -v "$b" >/dev/null || { echo "$b missing" >&2; exit 1; }
done
if [[ -z $MEMTIER || ! -x $MEMTIER ]]; then
    echo "memtier_benchmark not found (set MEMTIER; see the header for how to build it): memtier rows skipped"
    MEMTIER=
fi

start_servers() {
    redis-server --port 0 --unixsocket "$WORK/redis.sock" --unixsocketperm 700 --save '' \
        --appendonly no --daemonize no --logfile "$WORK/redis.log" &
    PIDS+=($!)
    local user=()
    [[ $EUID -eq 0 ]] && user=(-u root)
    memcached -s "$WORK/memcached.sock" -a 0700 -m 1024 "${user[@]}" &
    PIDS+=($!)
    for _ in $(seq 100); do
        [[ -S $WORK/redis.sock && -S $WORK/memcached.sock ]] && return
        sleep 0.1
    done
    echo "servers did not start" >&2
    exit 1
}

# redis-benchmark's keys (key:<12 digits>, as its -r makes them) with 32-byte values.
load_redis_benchmark_keys() {
    awk -v n="$RECORDS" 'BEGIN {
        v = sprintf("%032d", 7)
        for (i = 0; i < n; i++) printf "*3\r\n$3\r\nSET\r\n$16\r\nkey:%012d\r\n$32\r\n%s\r\n", i, v
    }' | redis-cli -s "$WORK/redis.sock" --pipe >/dev/null
}

# memtier's own keys, every one of them (P:P walks the range once).
load_memtier_keys() {
    local proto=$1 sock=$2
    "$MEMTIER" --unix-socket="$sock" --protocol="$proto" --ratio=1:0 --key-pattern=P:P \
        --key-minimum=1 --key-maximum="$RECORDS" --data-size=32 -t 1 -c 1 --requests=allkeys \
        --hide-histogram >/dev/null 2>&1
}

# kvbench's scenario for one server row: load (untimed here), then the measured get phase.
scenario() {
    local engine=$1 url=$2 depth=$3
    cat <<EOF
# bench/loadgen.sh: GET of existing keys, one thread, $CONNS connections, pipeline $depth.
seed = 5
sync = "none"
[dataset]
records = $RECORDS
key = { kind = "decimal", width = 12 }
value = { size = 32 }
[[engine]]
name = "$engine"
url = "$url"
options = { connections = $CONNS, pipeline = $depth }
[[phase]]
kind = "load"
[[phase]]
kind = "get"
count = $OPS
distribution = "uniform"
EOF
}

# Each runner appends "ops/s client-cpu-us-per-op" to its file.
run_kvbench() {
    local engine=$1 url=$2 depth=$3 out=$WORK/kv-out
    rm -rf "$out"
    scenario "$engine" "$url" "$depth" >"$WORK/s.toml"
    "$KVBENCH" run "$WORK/s.toml" --no-progress --format json --out "$out" --data-dir "$WORK/data" \
        --plan-dir "$WORK/plans" >/dev/null 2>"$WORK/kv.err" || { cat "$WORK/kv.err" >&2; return; }
    python3 - "$out"/*.json <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))
p = next(p for p in r["engines"][0]["phases"] if p["name"] == "get")
assert p["status"] == "ok" and p["mismatches"] + p["missing"] == 0, p
cpu = (p["cpu_user_ns"] + p["cpu_sys_ns"]) / 1e3
print(f'{p["ops_per_sec"]:.0f} {cpu / p["ops"]:.2f}')
EOF
}

# cpu_per_op TIMEFILE OPS: user + sys seconds from /usr/bin/time, in µs per op.
cpu_per_op() {
    awk -v n="$2" '{printf "%.2f", ($1 + $2) * 1e6 / n}' "$1"
}

run_redis_benchmark() {
    local depth=$1
    /usr/bin/time -f '%U %S' -o "$WORK/time" redis-benchmark -s "$WORK/redis.sock" -c "$CONNS" \
        -P "$depth" -n "$OPS" -r "$RECORDS" -d 32 -t get --csv >"$WORK/rb.csv" 2>/dev/null
    local rps
    rps=$(awk -F'"' '$2 == "GET" {print $4}' "$WORK/rb.csv")
    echo "${rps%.*} $(cpu_per_op "$WORK/time" "$OPS")"
}

run_memtier() {
    local proto=$1 sock=$2 depth=$3 per=$((OPS / CONNS))
    /usr/bin/time -f '%U %S' -o "$WORK/time" "$MEMTIER" --unix-socket="$sock" --protocol="$proto" \
        --ratio=0:1 --key-pattern=R:R --key-minimum=1 --key-maximum="$RECORDS" --data-size=32 \
        -t 1 -c "$CONNS" --pipeline="$depth" --requests="$per" --distinct-client-seed \
        --hide-histogram >"$WORK/mt.out" 2>"$WORK/mt.err"
    # The Gets line: ops/s, hits/s, misses/s ...; every key exists, so misses must be 0.
    awk '$1 == "Gets" && $4 + 0 > 0 {print "memtier: misses " $4 > "/dev/stderr"}' "$WORK/mt.out"
    # Throughput from the last progress line's average over the run: the summary table's
    # ops/sec counts whole seconds and reads 0 or a fraction for runs shorter than a second.
    local avg
    avg=$(tr '\r' '\n' <"$WORK/mt.err" | grep -o 'avg: *[0-9]*) ops/sec' | tail -1 | grep -o '[0-9][0-9]*')
    echo "$avg $(cpu_per_op "$WORK/time" $((per * CONNS)))"
}

median() {
    awk -v c="$1" '{print $c}' "$2" | sort -g | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'
}

# spread COLUMN FILE: lowest..highest of one column over the rounds.
spread() {
    awk -v c="$1" '{print $c}' "$2" | sort -g | awk 'NR == 1 {lo = $1} {hi = $1} END {print lo ".." hi}'
}

start_servers
load_redis_benchmark_keys
if [[ -n $MEMTIER ]]; then
    load_memtier_keys redis "$WORK/redis.sock"
    load_memtier_keys memcache_text "$WORK/memcached.sock"
fi
REDIS_URL="redis+unix://$WORK/redis.sock"
MC_URL="memcached+unix://$WORK/memcached.sock"

echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
for ((r = 1; r <= ROUNDS; r++)); do
    for d in $DEPTHS; do
        run_kvbench redis "$REDIS_URL" "$d" >>"$WORK/redis-kvbench-$d"
        run_redis_benchmark "$d" >>"$WORK/redis-redis-benchmark-$d"
        [[ -n $MEMTIER ]] && run_memtier redis "$WORK/redis.sock" "$d" >>"$WORK/redis-memtier-$d"
        if [[ -n $MEMTIER ]]; then
            run_memtier memcache_text "$WORK/memcached.sock" "$d" >>"$WORK/memcached-memtier-$d"
            run_kvbench memcached "$MC_URL" "$d" >>"$WORK/memcached-kvbench-$d"
        fi
    done
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
printf '%-10s %-4s %-16s %10s %16s %10s %9s %9s\n' server P tool GET/s range cpu-us/GET tput-x cpu-x
for server in redis memcached; do
    for d in $DEPTHS; do
        for tool in kvbench redis-benchmark memtier; do
            f=$WORK/$server-$tool-$d
            [[ -s $f ]] || continue
            t=$(median 1 "$f") c=$(median 2 "$f") rt=- rc=-
            if [[ $tool == kvbench ]]; then
                for peer in redis-benchmark memtier; do
                    pf=$WORK/$server-$peer-$d
                    [[ -s $pf ]] || continue
                    rt+=" $(awk -v a="$t" -v b="$(median 1 "$pf")" 'BEGIN {printf "%.2f", a / b}')"
                    rc+=" $(awk -v a="$c" -v b="$(median 2 "$pf")" 'BEGIN {printf "%.2f", a / b}')"
                done
                rt=${rt#- } rc=${rc#- }
            fi
            printf '%-10s %-4s %-16s %10s %16s %10s %9s %9s\n' "$server" "$d" "$tool" "$t" "$(spread 1 "$f")" "$c" \
                "${rt// /,}" "${rc// /,}"
        done
    done
done
echo "($CONNS connections on one client thread; medians of $ROUNDS alternated rounds of $OPS GETs;"
echo " tput-x = kvbench GET/s over each peer's (redis-benchmark, memtier in that order),"
echo " cpu-x = kvbench client CPU per GET over each peer's: the targets are tput-x >= 1, cpu-x <= 1)"
