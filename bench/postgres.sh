#!/usr/bin/env bash
# kvbench's postgres row beside PostgreSQL's own client and a minimal libpq loop, on the same
# private server (PostgreSQL 15, Unix socket only) and the same rows (article 002's `rows`
# generator, 8-digit keys, text columns), run alternately round after round:
#   COPY    kvbench `load = "copy-text"`, one COPY of every row   vs  psql's `\copy` of the
#           same rows from a file (exported once from kvbench's table; psql's `\timing`)
#   INSERT  kvbench `load = "insert"`, one prepared INSERT per row in one transaction   vs
#           bench/pg_insert.c: the same rows read into memory first, then one PQexecPrepared
#           per row between BEGIN and COMMIT (text parameters), timed from BEGIN to COMMIT;
#           beside the rates, each side's client CPU per row over the load (µs; kvbench's worker
#           process, the loop's process), which a busy machine disturbs far less than the rates
# Before every timed load the target table is empty and the server has run a CHECKPOINT
# (kvbench's prepare step does the same and waits for the WAL to settle). Prints per method the
# median rows/s of each side, their ratio (kvbench / peer) per round and its median, kvbench's
# harness share, and the load average at the end of each round.
#
# Usage: bench/postgres.sh   (ROUNDS=3 RECORDS=1000000 SYNC=commit (or none: fsync off)
#   METHODS="copy insert" DATA=/var/tmp KVBENCH=target/release/kvbench)
# Needs target/release/kvbench, PostgreSQL 15 (/usr/lib/postgresql/15/bin), psql, a C compiler
# and libpq-dev, python3. Run as root, the server runs as the postgres user.
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-3}
RECORDS=${RECORDS:-1000000}
SYNC=${SYNC:-commit}
METHODS=${METHODS:-copy insert}
DATA=${DATA:-/var/tmp}
KVBENCH=${KVBENCH:-$PWD/target/release/kvbench}
PG_BIN=${PG_BIN:-/usr/lib/postgresql/15/bin}
PORT=5432

[[ -x $KVBENCH ]] || { echo "$KVBENCH missing: cargo build --release -p kvbench" >&2; exit 1; }
[[ -x $PG_BIN/postgres ]] || { echo "$PG_BIN/postgres missing: apt-get install postgresql-15" >&2; exit 1; }
for b in psql cc python3; do command -v "$b" >/dev/null || { echo "$b missing" >&2; exit 1; }; done
WORK=$(mktemp -d "$DATA/kvbench-postgres.XXXXXX")
cleanup() {
    [[ -f $WORK/data/postmaster.pid ]] && as_pg "$PG_BIN/pg_ctl" stop -D "$WORK/data" -m fast >/dev/null 2>&1
    rm -rf "$WORK"
}
trap cleanup EXIT

as_pg() { if [[ $(id -u) == 0 ]]; then runuser -u postgres -- "$@"; else "$@"; fi; }

mkdir -p "$WORK/sock" "$WORK/kv"
[[ $(id -u) == 0 ]] && chown postgres "$WORK" "$WORK/sock"
as_pg "$PG_BIN/initdb" -D "$WORK/data" -U postgres --auth-local=trust --auth-host=reject --encoding=UTF8 \
    --locale=C --no-sync >"$WORK/initdb.log"
as_pg "$PG_BIN/postgres" -D "$WORK/data" -p "$PORT" -c listen_addresses= -c unix_socket_directories="$WORK/sock" \
    -c unix_socket_permissions=0700 -c max_connections=200 >"$WORK/postgres.log" 2>&1 &
CONN="host=$WORK/sock port=$PORT user=postgres dbname=postgres"
sql() { psql -X -q -v ON_ERROR_STOP=1 -c 'SET client_min_messages = warning' "$CONN" "$@"; }
for _ in $(seq 100); do sql -c 'SELECT 1' >/dev/null 2>&1 && break; sleep 0.1; done
cc -O2 -Wall -I"$(pg_config --includedir 2>/dev/null || echo /usr/include/postgresql)" -o "$WORK/pg_insert" \
    bench/pg_insert.c -lpq

# kvbench's scenario: one load phase of every row in one batch (one COPY or one transaction).
scenario() {
    cat >"$WORK/$1.toml" <<TOML
name = "postgres-$1"
seed = 42
sync = "$SYNC"
[dataset]
generator = "rows"
records = $RECORDS
key = { kind = "decimal", width = 8 }
[[phase]]
kind = "load"
distribution = "sequential"
batch = $RECORDS
[[engine]]
name = "postgres"
url = "$CONN"
options = { load = "$2", types = "text" }
TOML
}
scenario copy copy-text
scenario insert insert

# One kvbench load; prints "rows/s harness_share cpu_us_per_row".
run_kvbench() {
    rm -rf "$WORK/out" "$WORK/kv"
    "$KVBENCH" run "$WORK/$1.toml" --data-dir "$WORK/kv" --plan-dir "$WORK/plans" --out "$WORK/out" \
        --no-progress --format json >"$WORK/kv.out" 2>&1 || { cat "$WORK/kv.out" >&2; exit 1; }
    python3 - "$WORK/out" <<'PY'
import glob, json, sys
run = json.load(open(glob.glob(sys.argv[1] + "/*.json")[0]))
p = [p for p in run["engines"][0]["phases"] if p["name"] == "load"][0]
if p.get("status", "ok") not in ("ok", "warn"):
    sys.exit(f"kvbench load: {p.get('status')}: {p.get('error')}")
print(p["ops_per_sec"], p["harness_share"], (p["cpu_user_ns"] + p["cpu_sys_ns"]) / p["ops"] / 1000)
PY
}

# The peer's table emptied and a checkpoint taken, as kvbench's prepare step does.
fresh_peer_table() {
    sql -c 'DROP TABLE IF EXISTS peer_kv' -c 'CREATE TABLE peer_kv (k text COLLATE "C" PRIMARY KEY, v text)' \
        -c CHECKPOINT
    sleep 0.2
}

# One peer load; prints "rows/s cpu_us_per_row" (CPU: the INSERT loop only).
run_peer() {
    fresh_peer_table
    case $1 in
        copy)
            local ms
            ms=$(sql -c '\timing on' -c "\\copy peer_kv FROM '$WORK/rows.txt'" | awk '/^Time:/ { print $2 }')
            python3 -c "print($RECORDS / ($ms / 1000), 'nan')" ;;
        insert) "$WORK/pg_insert" "$CONN" peer_src peer_kv ;;
    esac
}

# The rows, once: kvbench loads them, they are kept as peer_src and exported for psql.
run_kvbench copy >/dev/null
sql -c 'DROP TABLE IF EXISTS peer_src' -c 'CREATE TABLE peer_src AS SELECT k, v FROM kvbench_kv' \
    -c "\\copy peer_src TO '$WORK/rows.txt'"
[[ $(wc -l <"$WORK/rows.txt") == "$RECORDS" ]] || { echo "export: not $RECORDS rows" >&2; exit 1; }

echo "== kvbench's postgres row beside psql \\copy and a libpq INSERT loop: $RECORDS rows" \
    "(article 002's rows, text columns), sync $SYNC, $ROUNDS rounds alternated," \
    "$("$PG_BIN/postgres" --version)"
: >"$WORK/results.txt"
for ((r = 0; r < ROUNDS; r++)); do
    for m in $METHODS; do
        if ((r % 2 == 0)); then
            peer=$(run_peer "$m")
            kv=$(run_kvbench "$m")
        else
            kv=$(run_kvbench "$m")
            peer=$(run_peer "$m")
        fi
        echo "$m $peer $kv $(cut -d' ' -f1 /proc/loadavg)" >>"$WORK/results.txt"
    done
done
python3 - "$WORK/results.txt" <<'PY'
import statistics as st, sys
# Each line: method, peer rows/s, peer cpu, kvbench rows/s, harness share, kvbench cpu, load average.
rows = [l.split() for l in open(sys.argv[1]) if l.strip()]
peer = {"copy": "psql \\copy", "insert": "libpq loop"}
print(f"{'method':<8} {'peer':<11} {'peer/s':>9} {'kvbench/s':>9} {'ratio':>6} {'harness':>7} {'cpu µs/row peer kvbench':>23}  ratios per round (load average)")
for m in dict.fromkeys(r[0] for r in rows):
    rs = [r for r in rows if r[0] == m]
    p, pc = [float(r[1]) for r in rs], [float(r[2]) for r in rs]
    k, h, kc = [float(r[3]) for r in rs], [float(r[4]) for r in rs], [float(r[5]) for r in rs]
    ratios = [b / a for a, b in zip(p, k)]
    per = " ".join(f"{x:.3f}({r[6]})" for x, r in zip(ratios, rs))
    cpu = f"{st.median(pc):.2f} {st.median(kc):.2f}"
    print(f"{m:<8} {peer[m]:<11} {st.median(p):9.0f} {st.median(k):9.0f} {st.median(ratios):6.3f} {st.median(h):7.3f} {cpu:>23}  {per}")
PY
