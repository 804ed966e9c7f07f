# Sourced by bench/db_bench.sh when BUDGET is set (BUDGET=512MiB): db_bench and kvbench's
# rocksdb row each run under a memory cgroup of that size, of the kind kvbench makes for a row
# (crates/kvbench/src/orchestrate/budget.rs: cgroup v1 memory.limit_in_bytes with the group's
# swappiness 0, or v2 memory.max with memory.swap.max 0), and are compared phase by phase.
# kvbench runs with --memory BUDGET (its worker joins the row's group before exec) and, as every
# budgeted scenario, settles (flush + compact the whole key range) before a read that follows
# the load. db_bench runs the fill, then for a read benchmark `compact,waitforcompaction`
# (CompactRange of the whole DB, then the automatic compactions it leaves, as kvbench's settle
# waits for them: at 4 M records CompactRange leaves 486 MB in L1 over its 256 MB target, and
# without the wait that L1-to-L2 compaction ran inside readrandom), then the benchmark, in one process in the group, as kvbench's
# worker does: a fresh process per phase gives the reads the memory the load's memtable kept
# (at 1 000 000 records in 128 MiB that alone made kvbench read 40x db_bench's bytes per get).
# With THREADS > 1 or readwhilewriting, each phase is its own process (--use_existing_db).
# Device bytes per phase: kvbench's result (/proc/PID/io of its worker between the phase's
# steps); db_bench's /proc/PID/io as each result line appears (or getrusage per process).
# Bytes per op are per record for every phase (RECORDS ops each; the settle does no ops).

BUDGET_BYTES=$(python3 - "$BUDGET" <<'EOF'
import re, sys
m = re.fullmatch(r"\s*([0-9.]+)\s*([kmgt]?)(i?b)?\s*", sys.argv[1].lower())
if not m:
    sys.exit(f"BUDGET={sys.argv[1]}: expected a size like 512MiB or 2GiB")
print(int(float(m[1]) * 1024 ** " kmgt".index(m[2] or " ")))
EOF
)

# The directory below which this shell can make a memory cgroup (v1's memory hierarchy at this
# shell's own group, else v2's root), and the cgroup version.
cg_parent() {
    local mount rel
    mount=$(awk '{ for (i = 7; i < NF; i++) if ($i == "-") { if ($(i + 1) == "cgroup" && $(i + 3) ~ /(^|,)memory(,|$)/) print $5; break } }' /proc/self/mountinfo | head -1)
    if [[ -n $mount ]]; then
        rel=$(awk -F: '$2 ~ /(^|,)memory(,|$)/ { print $3 }' /proc/self/cgroup)
        echo "v1 $mount$rel"
        return
    fi
    mount=$(awk '{ for (i = 7; i < NF; i++) if ($i == "-") { if ($(i + 1) == "cgroup2") print $5; break } }' /proc/self/mountinfo | head -1)
    [[ -n $mount ]] && grep -qw memory "$mount/cgroup.controllers" 2>/dev/null || {
        echo "BUDGET needs a memory cgroup (root, cgroup v1's memory hierarchy or v2 with memory)" >&2
        exit 1
    }
    grep -qw memory "$mount/cgroup.subtree_control" || echo +memory >"$mount/cgroup.subtree_control"
    echo "v2 $mount"
}
read -r CG_VERSION CG_PARENT <<<"$(cg_parent)"

# A new group of BUDGET_BYTES named after $1; prints its directory.
cg_make() {
    local d=$CG_PARENT/kvbench-db_bench-$$-$1
    mkdir "$d"
    if [[ $CG_VERSION == v1 ]]; then
        echo "$BUDGET_BYTES" >"$d/memory.limit_in_bytes"
        echo 0 >"$d/memory.swappiness"
    else
        echo "$BUDGET_BYTES" >"$d/memory.max"
        [[ -e $d/memory.swap.max ]] && echo 0 >"$d/memory.swap.max"
    fi
    echo "$d"
}

# "cgroup PEAK HITS" of group $1 (v1 max_usage and failcnt, v2 peak and events max), then remove it.
cg_done() {
    local d=$1 peak hits
    if [[ $CG_VERSION == v1 ]]; then
        peak=$(cat "$d/memory.max_usage_in_bytes") hits=$(cat "$d/memory.failcnt")
    else
        peak=$(cat "$d/memory.peak" 2>/dev/null || echo 0) hits=$(awk '$1 == "max" { print $2 }' "$d/memory.events")
    fi
    echo "cgroup $peak $hits"
    rmdir "$d"
}
CG_LIVE=""
trap 'rm -rf "$WORK"; [[ -n $CG_LIVE ]] && rmdir "$CG_LIVE" 2>/dev/null' EXIT

# Run "$@" inside group $1 (it joins before exec, as kvbench's worker does).
in_cgroup() {
    local cg=$1
    shift
    sh -c 'echo $$ >"$0/cgroup.procs" && exec "$@"' "$cg" "$@"
}

# One db_bench round under the budget; prints "PHASE ops/s read_bytes written_bytes cpu_s" per
# phase process, then the group's "cgroup PEAK HITS".
budget_db_bench() {
    rm -rf "$WORK/db_bench"
    CG_LIVE=$(cg_make db_bench)
    if [[ $THREADS == 1 && $DB_LINE != readwhilewriting ]]; then
        one_process_db_bench
        cg_done "$CG_LIVE"
        CG_LIVE=""
        echo "store $(sst_bytes "$WORK/db_bench")"
        return
    fi
    local -a runs=("${DB_BENCHMARKS%%,*} load")
    if [[ $DB_BENCHMARKS == *,* ]]; then
        [[ $PHASE == get ]] && runs+=("compact,waitforcompaction settle")
        runs+=("$DB_LINE $PHASE")
    fi
    local n=0 b label threads limit i o u s ops
    for run in "${runs[@]}"; do
        read -r b label <<<"$run"
        threads=1 limit=0
        if [[ $label == get ]]; then
            threads=$THREADS
            [[ $DB_LINE == readwhilewriting ]] && limit=$((WRITE_RATE * (16 + VALUE_SIZE)))
        fi
        # shellcheck disable=SC2046
        in_cgroup "$CG_LIVE" /usr/bin/time -f '%I %O %U %S' -o "$WORK/time" "$DB_BENCH" \
            $(db_bench_args "$b" "$BATCH" "$limit") --threads="$threads" --use_existing_db="$(tf $((n > 0)))" \
            >"$WORK/db_bench.out" 2>&1 || { cat "$WORK/db_bench.out" >&2; exit 1; }
        read -r i o u s <"$WORK/time"
        ops=$(awk -v b="$b" '$1 == b && $2 == ":" { for (i = 1; i <= NF; i++) if ($i == "ops/sec") print $(i - 1) }' \
            "$WORK/db_bench.out")
        echo "$label ${ops:-0} $((i * 512)) $((o * 512)) $(python3 -c "print($u + $s)")"
        n=$((n + 1))
    done
    cg_done "$CG_LIVE"
    CG_LIVE=""
    echo "store $(sst_bytes "$WORK/db_bench")"
}

# Bytes of the SST files under directory $1: the store's data, without its logs.
sst_bytes() { find "$1" -name '*.sst' -printf '%s\n' | awk '{ s += $1 } END { print s + 0 }'; }

# The phases in one db_bench process, as kvbench's row runs them in one worker (memory the load
# held, the memtable's arena above all, stays charged to the group for the reads): each phase's
# device bytes and CPU are /proc/PID/io and /proc/PID/stat read as its result line appears
# (polled every 50 ms), as kvbench marks a phase when its step result arrives.
one_process_db_bench() {
    local benchmarks=${DB_BENCHMARKS%%,*}
    if [[ $DB_BENCHMARKS == *,* ]]; then
        [[ $PHASE == get ]] && benchmarks+=,compact,waitforcompaction
        benchmarks+=,$DB_LINE
    fi
    # shellcheck disable=SC2046
    # sh itself (not a function's subshell) in the background: $! is the pid it execs
    # /usr/bin/time in, whose child is db_bench; time's totals give the last phase.
    rm -f "$WORK/time"
    sh -c 'echo $$ >"$0/cgroup.procs" && exec "$@"' "$CG_LIVE" /usr/bin/time -f '%I %O %U %S' -o "$WORK/time" \
        "$DB_BENCH" $(db_bench_args "$benchmarks" "$BATCH" 0) --threads=1 >"$WORK/db_bench.out" 2>&1 &
    local pid=$!
    python3 - "$pid" "$WORK/db_bench.out" "$benchmarks" "$PHASE" "$WORK/time" <<'EOF'
import os, re, sys, time
tpid, out, names, phase, tfile = int(sys.argv[1]), sys.argv[2], sys.argv[3].split(","), sys.argv[4], sys.argv[5]
labels = {names[0]: "load", "compact": "settle", "waitforcompaction": "settle", names[-1]: phase}
tick = os.sysconf("SC_CLK_TCK")
pid = None
while pid is None:
    kids = open(f"/proc/{tpid}/task/{tpid}/children").read().split() if os.path.exists(f"/proc/{tpid}") else ["0"]
    pid = int(kids[0]) if kids else time.sleep(0.01)
def sample():
    io = dict(l.split(": ") for l in open(f"/proc/{pid}/io").read().split("\n") if l)
    st = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    # What reached the device, as kvbench's figure: pages written and then truncated or deleted
    # before writeback (a WAL whose memtable was flushed) are cancelled.
    written = int(io["write_bytes"]) - int(io["cancelled_write_bytes"])
    return int(io["read_bytes"]), written, (int(st[11]) + int(st[12])) / tick
def totals():
    while os.path.exists(f"/proc/{tpid}") or not os.path.exists(tfile) or not open(tfile).read().strip():
        time.sleep(0.05)
    i, o, u, s = open(tfile).read().split()[-4:]
    return int(i) * 512, int(o) * 512, float(u) + float(s)
def results(text):
    """(benchmark, ops/s) of each result line in order. waitforcompaction's own lines reach the
    file only with the next benchmark's (stdout is buffered), so its end is taken as the first
    progress line (stderr, `... finished N ops`) after compact's result: the next benchmark's
    first hundred ops."""
    out, after_compact = [], False
    for tok in re.split(r"[\r\n]", text):
        if re.match(r"^\S+\s+:", tok):
            m = re.search(r"([0-9.]+) ops/sec", tok)
            out.append((tok.split()[0], m[1] if m else 0))
            after_compact = out[-1][0] == "compact" and "waitforcompaction" in names
        elif after_compact and tok.startswith("... finished"):
            out.append(("waitforcompaction", 0))
            after_compact = False
    return out
# One line per phase: consecutive results of one label (compact, waitforcompaction) add up.
last, seen, ended, pending = (0, 0, 0.0), 0, False, None
while True:
    try:
        now = sample()
    except (FileNotFoundError, ProcessLookupError, KeyError, IndexError):
        now, ended = totals(), True
    found = results(open(out).read())
    for name, ops in found[seen:]:
        label, delta = labels.get(name, name), [a - b for a, b in zip(now, last)]
        if pending and pending[0] == label:
            pending[2:] = [a + b for a, b in zip(pending[2:], delta)]
        else:
            if pending:
                print(*pending)
            pending = [label, ops, *delta]
        last, seen = now, seen + 1
    if found and found[-1][0] == names[-1]:
        print(*pending)
        break
    if ended:
        sys.exit(f"db_bench ended before {names[-1]}:\n" + open(out).read())
    time.sleep(0.05)
EOF
    wait "$pid" || { cat "$WORK/db_bench.out" >&2; exit 1; }
}

# One kvbench round under the budget; the same lines from its result (the settle phase as
# `settle`), and its row's cgroup figures.
budget_kvbench() {
    rm -rf "$WORK/kv" "$WORK/out"
    kvbench_scenario "$WORK/scenario.toml" "$PHASES"
    "$KVBENCH" run "$WORK/scenario.toml" --memory "$BUDGET" --yes --data-dir "$WORK/kv" --plan-dir "$WORK/plans" \
        --out "$WORK/out" --no-progress --format json --keep-data >"$WORK/kv.out" 2>&1 ||
        { cat "$WORK/kv.out" >&2; exit 1; }
    echo "store $(sst_bytes "$WORK/kv")"
    python3 - "$WORK/out" <<'EOF'
import glob, json, sys
e = json.load(open(glob.glob(sys.argv[1] + "/*.json")[0]))["engines"][0]
for p in e["phases"]:
    d = p.get("disk") or {}
    cpu = (p.get("cpu_user_ns", 0) + p.get("cpu_sys_ns", 0)) / 1e9
    name = "settle" if p["kind"] == "settle" else p["name"]
    print(name, p.get("ops_per_sec", 0), d.get("read_bytes", 0), d.get("write_bytes", 0), cpu)
b = e.get("budget") or {}
print("cgroup", b.get("peak_bytes", 0), b.get("limit_hits", 0))
EOF
}

# Every round of benchmark $1 under the budget, then per phase the medians and ratios.
budget_bench() {
    : >"$WORK/db.txt"
    : >"$WORK/kv.txt"
    for ((r = 0; r < ROUNDS; r++)); do
        if ((r % 2 == 0)); then
            budget_db_bench >>"$WORK/db.txt"
            budget_kvbench >>"$WORK/kv.txt"
        else
            budget_kvbench >>"$WORK/kv.txt"
            budget_db_bench >>"$WORK/db.txt"
        fi
    done
    python3 - "$1" "$RECORDS" "$WORK/db.txt" "$WORK/kv.txt" <<'EOF'
import statistics as st, sys
bench, ops, db, kv = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
def rows(f):
    out = {}
    for l in open(f):
        name, *v = l.split()
        out.setdefault(name, []).append(list(map(float, v)))
    return out
d, k = rows(db), rows(kv)
med = lambda rs, i: st.median(r[i] for r in rs)
ratio = lambda a, b: f"{b / a:6.3f}" if a else "     -"
for phase in [p for p in d if p not in ("cgroup", "store") and p in k]:
    dp, kp = d[phase], k[phase]
    # A settle does no operations: its ops/s are not a figure.
    rates = f"{'-':>9} {'-':>9} {'-':>6}" if phase == "settle" else \
        f"{med(dp, 0):9.0f} {med(kp, 0):9.0f} {ratio(med(dp, 0), med(kp, 0))}"
    print(f"{bench + ':' + phase:<22} {rates} "
          f"{med(dp, 2) / ops:8.1f} {med(kp, 2) / ops:8.1f} {ratio(med(dp, 2), med(kp, 2))} "
          f"{med(dp, 1) / ops:8.1f} {med(kp, 1) / ops:8.1f} {ratio(med(dp, 1), med(kp, 1))} "
          f"{med(dp, 3) * 1e6 / ops:8.2f} {med(kp, 3) * 1e6 / ops:8.2f}")
peak = lambda rs: f"peak {max(r[0] for r in rs) / 2**20:.0f} MiB, limit hits {st.median(r[1] for r in rs):.0f}"
print(f"{'':<22} cgroup: db_bench {peak(d['cgroup'])}; kvbench {peak(k['cgroup'])}")
sst = lambda rs: st.median(r[0] for r in rs) / 1e6
print(f"{'':<22} SST files at the end: db_bench {sst(d['store']):.1f} MB, kvbench {sst(k['store']):.1f} MB"
      f" ({ratio(sst(d['store']), sst(k['store'])).strip()})")
EOF
}
