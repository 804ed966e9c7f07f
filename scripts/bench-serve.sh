#!/usr/bin/env bash
# kvbench serve against RocksServer, both speaking RocksServer's HTTP API over loopback:
#   /get throughput with wrk (CONNS connections, uniform random keys), and
#   /mget latency of 300 and 1000 random keys a request (one connection, p50 from wrk --latency).
# Same data in both: RECORDS records, 8-digit keys, values of 45..55 bytes, loaded with /mset;
# warm cache (a warm-up pass before each measurement). Not a test: a benchmark (docs/servers.md).
#
# usage: scripts/bench-serve.sh            (kvbench serve only)
#        ROCKSSERVER=/path/RocksServer.bin scripts/bench-serve.sh
# env:   KVBENCH (target/release/kvbench), RECORDS (1000000), CONNS (8), DURATION (10 s),
#        THREADS (kvbench serve --threads; default the CPU count), EXEC (auto|inline|blocking),
#        ROUNDS (2: the two servers are measured alternately this many times),
#        TESTS ("get mget": which measurements; the ratio of /get req/s is printed per round),
#        GET_LUA (scripts/bench-serve/get.lua: the wrk script of the /get measurement)
set -euo pipefail
cd "$(dirname "$0")/.."
KVBENCH=${KVBENCH:-target/release/kvbench}
ROCKSSERVER=${ROCKSSERVER:-}
RECORDS=${RECORDS:-1000000}
CONNS=${CONNS:-8}
DURATION=${DURATION:-10}
ROUNDS=${ROUNDS:-2}
EXEC=${EXEC:-auto}
TESTS=${TESTS:-get mget}
HERE=scripts/bench-serve
GET_LUA=${GET_LUA:-$HERE/get.lua}
command -v wrk >/dev/null || { echo "wrk not found (Debian package wrk)" >&2; exit 2; }
[ -x /usr/bin/time ] || { echo "/usr/bin/time not found (Debian package time)" >&2; exit 2; }
[ -x "$KVBENCH" ] || { echo "$KVBENCH not found: cargo build --release -p kvbench" >&2; exit 2; }

WORK=$(mktemp -d /tmp/bench-serve.XXXXXX)
chmod 700 "$WORK"
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
  rm -rf "$WORK"
}
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_port() {
  for _ in $(seq 300); do
    (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0
    sleep 0.1
  done
  echo "nothing listens on port $1" >&2; exit 1
}

TOKEN=$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')
KV_PORT=$(free_port)
printf '%s\n' "$TOKEN" > "$WORK/token"
threads=()
[ -n "${THREADS:-}" ] && threads=(--threads "$THREADS")
"$KVBENCH" serve --engine rocksdb --dir "$WORK/kvbench" --listen "127.0.0.1:$KV_PORT" --sync none \
  --token-file "$WORK/token" --exec "$EXEC" "${threads[@]}" 2>"$WORK/kvbench.log" &
PIDS+=($!)
wait_port "$KV_PORT"
python3 "$HERE/load.py" "127.0.0.1:$KV_PORT" "$RECORDS" "$TOKEN"

KV_PID=${PIDS[-1]}
servers=("kvbench:$KV_PORT:$TOKEN:$KV_PID")
if [ -n "$ROCKSSERVER" ]; then
  RS_PORT=$(free_port)
  cat > "$WORK/rocksserver.ini" <<INI
server_host = 127.0.0.1
server_port = $RS_PORT
db_path = $WORK/rocksserver
log_level = error
error_log = $WORK/rocksserver.log
INI
  "$ROCKSSERVER" "$WORK/rocksserver.ini" 2>>"$WORK/rocksserver.log" &
  PIDS+=($!)
  wait_port "$RS_PORT"
  python3 "$HERE/load.py" "127.0.0.1:$RS_PORT" "$RECORDS"
  servers+=("rocksserver:$RS_PORT::${PIDS[-1]}")
fi

# Both must answer a loaded key with its value, and an absent key with -1.
for s in "${servers[@]}"; do
  IFS=: read -r name port token pid <<<"$s"
  auth=()
  [ -n "$token" ] && auth=(-H "Authorization: Bearer $token")
  got=$(curl -s "${auth[@]}" "http://127.0.0.1:$port/get?00000007" | head -1)
  absent=$(curl -s "${auth[@]}" "http://127.0.0.1:$port/get?absent")
  [ "$got" -ge 45 ] && [ "$absent" = "-1" ] || { echo "$name does not answer as RocksServer does: $got / $absent" >&2; exit 1; }
  # wrk does not read bodies: check that a multi-get answers every key with its value.
  lines=$(curl -s "${auth[@]}" "http://127.0.0.1:$port/mget?00000001&00000002&00000003" | awk 'NR % 3 == 2 && $1 >= 45' | wc -l)
  [ "$lines" = 3 ] || { echo "$name: /mget did not answer 3 values" >&2; exit 1; }
done

# Server CPU time (user + system, clock ticks) and context switches of all its threads.
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
ctx_switches() { cat /proc/"$1"/task/*/status | awk '/ctxt_switches/ {n += $2} END {print n}'; }

run_wrk() { # name port token script conns pid -> "req/s p50 cpu_us_per_req ctxsw_per_req wrk_cpu_us_per_req"
  local port=$2 token=$3 script=$4 conns=$5 pid=$6
  local t0 c0
  t0=$(cpu_ticks "$pid"); c0=$(ctx_switches "$pid")
  TOKEN=$token RECORDS=$RECORDS KEYS=${KEYS:-300} /usr/bin/time -f '%U %S' -o "$WORK/wrk.time" wrk -t1 -c"$conns" -d"${DURATION}s" --latency \
    -s "$script" "http://127.0.0.1:$port" >"$WORK/wrk.out"
  local rps p50 reqs t1 c1
  t1=$(cpu_ticks "$pid"); c1=$(ctx_switches "$pid")
  rps=$(awk '/^Requests\/sec/ {print $2}' "$WORK/wrk.out")
  p50=$(awk '/^ +50%/ {print $2}' "$WORK/wrk.out")
  reqs=$(awk '/requests in/ {print $1}' "$WORK/wrk.out")
  if grep -q "Non-2xx" "$WORK/wrk.out"; then echo "$1: non-2xx replies" >&2; cat "$WORK/wrk.out" >&2; exit 1; fi
  echo "$rps $p50 $(awk -v t=$((t1 - t0)) -v c=$((c1 - c0)) -v n="$reqs" -v hz="$(getconf CLK_TCK)" \
    'BEGIN {printf "%.1f %.2f", t / hz * 1e6 / n, c / n}') $(awk -v n="$reqs" '{printf "%.1f", ($1 + $2) * 1e6 / n}' "$WORK/wrk.time")"
}

echo "records=$RECORDS conns=$CONNS duration=${DURATION}s exec=$EXEC cpus=$(nproc)"
# Let each server finish flushing and compacting after the load (its CPU time stops growing).
settle() {
  local before after
  for _ in $(seq 60); do
    before=$(cpu_ticks "$1"); sleep 2; after=$(cpu_ticks "$1")
    [ $((after - before)) -le 2 ] && return 0
  done
}
for s in "${servers[@]}"; do IFS=: read -r _ _ _ pid <<<"$s"; settle "$pid"; done

echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
row() { printf '%-12s %5s %-20s %10s %10s %12s %10s %10s\n' "$@"; }
ratios=()
kv_rps=0
row server round test "req/s" p50 "server-cpu" "ctxsw" "wrk-cpu"
row "" "" "" "" "" "us/req" "/req" "us/req"
for round in $(seq "$ROUNDS"); do
  for s in "${servers[@]}"; do
    IFS=: read -r name port token pid <<<"$s"
    if [[ " $TESTS " == *" get "* ]]; then
      DURATION=2 run_wrk "$name" "$port" "$token" "$GET_LUA" "$CONNS" "$pid" >/dev/null # warm-up
      read -r rps p50 cpu ctx wcpu <<<"$(run_wrk "$name" "$port" "$token" "$GET_LUA" "$CONNS" "$pid")"
      row "$name" "$round" "get c=$CONNS" "$rps" "$p50" "$cpu" "$ctx" "$wcpu"
      [ "$name" = kvbench ] && kv_rps=$rps
      [ "$name" = rocksserver ] && ratios+=("$(awk -v a="$kv_rps" -v b="$rps" 'BEGIN {printf "%.2f", a / b}')")
    fi
    [[ " $TESTS " == *" mget "* ]] || continue
    for keys in 300 1000; do
      read -r rps p50 cpu ctx wcpu <<<"$(KEYS=$keys run_wrk "$name" "$port" "$token" "$HERE/mget.lua" 1 "$pid")"
      row "$name" "$round" "mget $keys keys c=1" "$rps" "$p50" "$cpu" "$ctx" "$wcpu"
    done
  done
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
if [ ${#ratios[@]} -gt 0 ]; then
  echo "/get req/s, kvbench serve / RocksServer, per round: ${ratios[*]}; median $(printf '%s\n' "${ratios[@]}" | sort -n | awk '{a[NR] = $1} END {print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2}')"
fi
