"""Instructions and simulated cache misses per get of the Python worker's get step and of the
minimal py-lmdb loop (docs/methodology.md, "The harness against a minimal loop, per runtime"), counted by
valgrind's callgrind in the threads that run each (--toggle-collect=thread_run; the worker core's
work in those threads is included): unlike the clock, the counts do not move with the machine's
load. Each is run at GETS and 2 x GETS gets over the same database (harness.py's, RECORDS
records), and the difference divided by GETS is what one more get costs, without the process's
start-up and the step's fixed costs. The minimal loop's count includes making its keys
(harness.minimal does that before it starts its clock). Needs valgrind; takes a few minutes.

    drivers/python/.venv/bin/python drivers/python/bench/instructions.py [--records N] [--gets N] [--no-verify]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import threading

import harness

EVENTS = ("Ir", "D1mr", "D1mw", "DLmr", "DLmw")


def step(db: str, records: int, gets: int, which: str, verify: bool) -> None:
    """Run one job with a get step in this process (its ops run in a thread) or the minimal loop
    in a thread."""
    if which == "minimal":
        t = threading.Thread(target=harness.minimal, args=(db, records, gets))
        t.start()
        t.join()
        return
    from kvbench_driver.__main__ import Events, run

    job = dict(harness.base(db, records), steps=[{"step": "open", "index": 0, "mode": "read-only"},
                                                 dict(harness.get_step(records, gets), verify=verify),
                                                 {"step": "close", "index": 2}])
    with tempfile.TemporaryDirectory(prefix="kvbench-callgrind-") as tmp:
        path, events = os.path.join(tmp, "job.json"), os.path.join(tmp, "events.jsonl")
        with open(path, "w") as f:
            json.dump(job, f)
        emit = Events(os.open(events, os.O_WRONLY | os.O_CREAT))
        run(path, emit)
        emit.close()
        with open(events) as f:
            r = next(e for e in map(json.loads, f) if e["event"] == "step" and e["index"] == 1)
    assert r["mismatches"] == 0 and r["missing"] == 0 and r["errors"] == 0, r


def counted(db: str, records: int, gets: int, which: str, verify: bool) -> dict:
    with tempfile.NamedTemporaryFile(prefix="kvbench-callgrind-") as out:
        subprocess.run(["valgrind", "--tool=callgrind", "--cache-sim=yes", "--D1=32768,8,64", "--LL=1048576,16,64",
                        "--toggle-collect=thread_run", f"--callgrind-out-file={out.name}", sys.executable, __file__,
                        "--step", which, "--db", db, "--records", str(records), "--gets", str(gets)]
                       + ([] if verify else ["--no-verify"]), check=True, capture_output=True)
        text = open(out.name).read()
    totals = re.search(r"^(?:summary|totals): (.*)$", text, re.M).group(1).split()
    names = re.search(r"^events: (.*)$", text, re.M).group(1).split()
    return {k: int(v) for k, v in zip(names, totals) if k in EVENTS}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--records", type=int, default=1_000_000)
    ap.add_argument("--gets", type=int, default=65536)
    ap.add_argument("--no-verify", action="store_true")
    ap.add_argument("--step", choices=("worker", "minimal"))
    ap.add_argument("--db")
    a = ap.parse_args()
    if a.step:
        step(a.db, a.records, a.gets, a.step, not a.no_verify)
        return
    with tempfile.TemporaryDirectory(prefix="kvbench-pybench-") as tmp:
        db = harness.load(tmp, a.records)
        for which in ("worker", "minimal"):
            one, two = (counted(db, a.records, g, which, not a.no_verify) for g in (a.gets, 2 * a.gets))
            print(f"{which:8} per get: " + ", ".join(f"{k} {(two[k] - one[k]) / a.gets:,.1f}" for k in EVENTS))


if __name__ == "__main__":
    main()
