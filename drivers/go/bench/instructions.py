"""Instructions per get of the Go worker and of the minimal loop, counted by cachegrind.

Run by `CACHEGRIND=1 bench/run.sh RECORDS COUNT`: each program runs COUNT and 2 x COUNT gets
under valgrind; the difference divided by COUNT is what one more get costs, without start-up,
open and pool. The counts do not depend on the machine's load (wall-clock ratios on a shared
machine do); Go's runtime (the garbage collector above all) varies a little from run to run.
    python3 instructions.py WORK RECORDS COUNT
"""

import collections
import subprocess
import sys

work, records, count = sys.argv[1], sys.argv[2], int(sys.argv[3])


def counts(cmd):
    """Instructions and first-level data cache misses per function of one run."""
    out = f"{work}/cachegrind.out"
    subprocess.run(
        ["valgrind", "--tool=cachegrind", "--cache-sim=yes", f"--cachegrind-out-file={out}", *cmd],
        check=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    events, fn, per_fn = [], None, collections.defaultdict(lambda: [0, 0])
    for line in open(out):
        if line.startswith("events:"):
            events = line.split()[1:]
        elif line.startswith("fn="):
            fn = line[3:].strip()
        elif line[:1].isdigit() and fn:
            d = dict(zip(events, map(int, line.split()[1:])))
            per_fn[fn][0] += d.get("Ir", 0)
            per_fn[fn][1] += d.get("D1mr", 0) + d.get("D1mw", 0)
    return per_fn


def per_get(short, long):
    a, b = counts(short), counts(long)
    return {f: [(b[f][i] - a.get(f, [0, 0])[i]) / count for i in range(2)] for f in b}


def runtime(fn):
    return fn.startswith("runtime.") or fn.startswith("gcWriteBarrier")


minimal = [f"{work}/minimal", "-db", f"{work}/db/data.bolt", "-records", records, "-count"]
m = per_get(minimal + [str(count)], minimal + [str(2 * count)])
w = per_get([f"{work}/worker", "--job", f"{work}/get.json"], [f"{work}/worker", "--job", f"{work}/get2.json"])
for name, c in (("minimal", m), ("worker", w)):
    ir, d1 = sum(v[0] for v in c.values()), sum(v[1] for v in c.values())
    rt = sum(v[0] for f, v in c.items() if runtime(f))
    print(f"{name}: {ir:.0f} instructions per get ({rt:.0f} in Go's runtime), {d1:.1f} D1 misses")
diff = {f: w.get(f, [0, 0])[0] - m.get(f, [0, 0])[0] for f in set(w) | set(m)}
rt = sum(v for f, v in diff.items() if runtime(f))
print(f"worker - minimal: {sum(diff.values()) - rt:.0f} instructions outside Go's runtime, {rt:.0f} in it")
for f, v in sorted(diff.items(), key=lambda x: -abs(x[1]))[:15]:
    print(f"  {v:8.1f}  {f}")
