#!/usr/bin/env bash
# Does `kvbench compare` call noise a difference, and does it see a real one? Runs PAIRS pairs
# of identical runs (the `memory` engine, the same scenario twice) and PAIRS pairs where B is
# slowed by a known fraction (the memory engine's `delay_ns`, calibrated so every get and
# write call costs SLOWDOWN more time: throughput 1/(1+SLOWDOWN) of A's), then prints how
# many verdicts `compare` called in each: "slower"/"faster" in identical pairs are false
# alarms; "slower" in the get phase of a slowed pair is a detection. Verdicts are counted as
# decided, before the "unreliable" mark a busy machine adds (printed apart).
#
#   bench/verdicts.sh                      20 + 20 pairs, 5 repetitions, 25% slowdown
#   PAIRS=5 REPS=5 SLOWDOWN=0.10 bench/verdicts.sh
#   MIN_EFFECT=10 bench/verdicts.sh        compare --min-effect 10
#   MODE=interleaved bench/verdicts.sh     A and B as two rows of ONE run, their repetitions
#                                          interleaved (as `--vary` runs them), then split into
#                                          two files for `compare`: drift between runs cancels
set -euo pipefail
cd "$(dirname "$0")/.."
PAIRS=${PAIRS:-20}
REPS=${REPS:-5}
SLOWDOWN=${SLOWDOWN:-0.25}
MIN_EFFECT=${MIN_EFFECT:-5}
RECORDS=${RECORDS:-100000}
GETS=${GETS:-1000000}
KV=${KVBENCH:-target/release/kvbench}
[[ -x $KV ]] || cargo build --release --quiet -p kvbench
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

scenario() { # $1 = B's delay in ns; separate runs: one row with it; interleaved: rows a (0) and b
    local rows="[[engine]]
name = \"memory\"
label = \"m\"
options = { delay_ns = $1 }"
    if [[ ${MODE:-separate} == interleaved ]]; then
        rows="[[engine]]
name = \"memory\"
label = \"a\"
[[engine]]
name = \"memory\"
label = \"b\"
options = { delay_ns = $1 }"
    fi
    cat > "$work/s-$1.toml" <<EOF
# bench/verdicts.sh: the memory engine, delay_ns = $1
name = "verdicts"
repetitions = $REPS
$rows
[dataset]
records = $RECORDS
[[phase]]
kind = "load"
batch = 1
[[phase]]
kind = "get"
distribution = "uniform"
count = $GETS
EOF
    echo "$work/s-$1.toml"
}

run() { # $1 scenario, $2 output
    rm -rf "$work/out"
    "$KV" run "$1" --no-progress --out "$work/out" --format json >/dev/null 2>"$work/err" || { cat "$work/err"; exit 1; }
    rm -f "$work/out/latest.json"
    mv "$work"/out/*.json "$2"
}

# Calibrate: the get phase's time per op without a delay; B spins SLOWDOWN of it per call.
run "$(scenario 0)" "$work/A-cal.json"
per_op=$(python3 -c "import json,sys; r=json.load(open(sys.argv[1])); \
print(min(1e9/p['ops_per_sec'] for e in r['engines'] for p in e['phases'] if p['name']=='get'))" "$work/A-cal.json")
delay=$(python3 -c "print(round($per_op * $SLOWDOWN))")
echo "get: ${per_op} ns per op without delay; B spins ${delay} ns per call (slowdown ${SLOWDOWN})"

count() { # $1 a, $2 b: prints "decided-verdicts-of-get unreliable-count"
    "$KV" compare "$1" "$2" --format json --min-effect "$MIN_EFFECT" | python3 -c "
import json, sys
j = json.load(sys.stdin)
rows = [r for r in j['rows'] if r['phase'] == 'get']
print(' '.join(r['decided'].replace(' ', '_') + '(B/A=%.3f)' % (r['ratio'] or 0) for r in rows), 'unreliable' if j['unreliable'] else 'reliable')"
}

# Interleaved: one run whose rows a and b become the A and B files, both labelled m.
split() { # $1 run file, $2 A out, $3 B out
    python3 - "$@" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
for label, out in (("a", sys.argv[2]), ("b", sys.argv[3])):
    side = dict(r, run_id=r["run_id"] + "-" + label, engines=[dict(e, label="m") for e in r["engines"] if e["label"] == label])
    json.dump(side, open(out, "w"))
PY
}

pair() { # $1 B's delay, $2 $3 the A and B files
    if [[ ${MODE:-separate} == interleaved ]]; then
        run "$(scenario "$1")" "$work/both.json"
        split "$work/both.json" "$2" "$3"
    else
        run "$(scenario 0)" "$2"
        run "$(scenario "$1")" "$3"
    fi
}

same_called=0 slow_found=0 unreliable=0
for i in $(seq "$PAIRS"); do
    pair 0 "$work/A-$i.json" "$work/B-$i.json"
    read -r v rel < <(count "$work/A-$i.json" "$work/B-$i.json")
    [[ $v == slower* || $v == faster* ]] && same_called=$((same_called + 1))
    [[ $rel == unreliable ]] && unreliable=$((unreliable + 1))
    pair "$delay" "$work/C-$i.json" "$work/D-$i.json"
    read -r w rel < <(count "$work/C-$i.json" "$work/D-$i.json")
    [[ $w == slower* ]] && slow_found=$((slow_found + 1))
    [[ $rel == unreliable ]] && unreliable=$((unreliable + 1))
    echo "pair $i: identical -> $v; B slowed -> $w"
done
echo "identical pairs with a slower/faster verdict: $same_called of $PAIRS"
echo "slowed pairs detected as slower:             $slow_found of $PAIRS"
echo "pairs marked unreliable (busy machine):      $unreliable of $((2 * PAIRS))"
