#!/usr/bin/env bash
# Two commands timed as whole processes in turn (A B A B ...), so a drift in the machine's speed
# touches both sides of each pair alike; prints each pair's wall and CPU (user + system) ratio
# A/B and their medians. Each command runs through `bash -c`; its output goes to /dev/null.
#
# Usage: bench/paired.sh PAIRS 'COMMAND_A' 'COMMAND_B'     (needs /usr/bin/time and python3)
set -euo pipefail
[ $# -eq 3 ] || { echo "usage: $0 PAIRS 'COMMAND_A' 'COMMAND_B'" >&2; exit 2; }
pairs=$1
[[ $pairs =~ ^[1-9][0-9]{0,3}$ ]] || { echo "$0: PAIRS must be 1 to 9999, got '$pairs'" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
timed() { # command, output file: "wall user sys"
    /usr/bin/time -f '%e %U %S' -o "$2" bash -c "$1" >/dev/null 2>"$tmp/err" \
        || { echo "$0: failed: $1" >&2; cat "$tmp/err" >&2; exit 1; }
}
for i in $(seq "$pairs"); do
    timed "$2" "$tmp/a.$i"
    timed "$3" "$tmp/b.$i"
    echo "pair $i: A $(cat "$tmp/a.$i"), B $(cat "$tmp/b.$i") (wall user sys, s)"
done
python3 - "$tmp" "$pairs" <<'PY'
import statistics, sys
d, n = sys.argv[1], int(sys.argv[2])
def read(side, i):
    wall, user, sys_ = map(float, open(f"{d}/{side}.{i}").read().split()[-3:])
    return wall, user + sys_
walls, cpus = [], []
for i in range(1, n + 1):
    (aw, ac), (bw, bc) = read("a", i), read("b", i)
    walls.append(aw / max(bw, 1e-9))
    cpus.append(ac / max(bc, 1e-9))
print(f"A/B wall {statistics.median(walls):.3f} (median of {n} pairs; {min(walls):.3f}-{max(walls):.3f}), "
      f"CPU {statistics.median(cpus):.3f}")
PY
