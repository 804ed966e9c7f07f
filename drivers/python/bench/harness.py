"""The Python worker against a minimal py-lmdb loop (docs/methodology.md, "The harness
against a minimal loop, per runtime"): random gets over RECORDS records of 100 bytes,
kvbench's default keys (16-digit decimal), the same keys in both (the minimal loop takes the
get step's keys from the worker core before it starts its clock); the minimal loop times each
get with perf_counter_ns and keeps the samples, nothing else. Prints the wall-clock ops/s of
each and their ratio, and beside them the CPU time per get (user + system, of the step or of
the loop), which a busy machine disturbs less than the wall clock.

    drivers/python/.venv/bin/python drivers/python/bench/harness.py [--records N] [--gets N] [--repeat N]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from array import array
from ctypes import byref, string_at

import lmdb

from kvbench_driver import core, runner

SEED = 42


def dataset(records: int) -> dict:
    return {"generator": "synthetic", "key": {"kind": "decimal", "width": 16},
            "value": {"min": 100, "max": 100, "content": "printable"}, "loaded": records, "total": records,
            "ordered": True, "pool_seed": SEED, "value_seed": SEED + 1, "open_records": records,
            "open_bytes": records * 130}


def get_step(records: int, gets: int) -> dict:
    return {"step": "ops", "index": 1, "name": "get", "kind": "get", "count": gets,
            "dist": {"name": "uniform", "n": records}, "rec_seed": SEED + 2}


def worker(job: dict, path: str) -> list:
    with open(path, "w") as f:
        json.dump(job, f)
    out = subprocess.run([sys.executable, "-m", "kvbench_driver", "--job", path], capture_output=True, text=True,
                         check=True)
    return [json.loads(line) for line in out.stdout.splitlines()]


def minimal(db: str, records: int, gets: int) -> tuple[float, float]:
    """ops/s and CPU ns per get of the bare loop; keys derived beforehand, outside the timing."""
    keys = step_keys(db, records, gets)
    env = lmdb.open(db, readonly=True, lock=True, map_size=1 << 34)
    txn = env.begin()
    get, pc = txn.get, time.perf_counter_ns
    samples = [0] * gets
    i = 0
    cpu, start = time.process_time_ns(), pc()
    for k in keys:
        t0 = pc()
        get(k)
        t1 = pc()
        samples[i] = t1 - t0
        i += 1
    wall, cpu = pc() - start, time.process_time_ns() - cpu
    txn.abort()
    env.close()
    return gets / (wall / 1e9), cpu / gets


def step_keys(db: str, records: int, gets: int) -> list:
    """The get step's keys in the worker's order, as the worker core hands them out (its blocks
    handed back unchecked: the step does not verify)."""
    lib = core.load()
    with tempfile.TemporaryDirectory(prefix="kvbench-pybench-") as tmp:
        path = os.path.join(tmp, "job.json")
        with open(path, "w") as f:
            json.dump(dict(base(db, records), steps=[dict(get_step(records, gets), verify=False)]), f)
        events = os.open(os.devnull, os.O_WRONLY)
        job = lib.kvb_job_open(path.encode(), events)
        lib.kvb_step_begin(job)
        th, keys = lib.kvb_thread_new(job, 0, runner.BLOCK), []
        while (b := lib.kvb_next(th).contents).units:
            n = b.units
            keys += runner.cut(b.key, b.key_off, array("I", string_at(b.key_end, 4 * n))[-1])
            lib.kvb_done(th, n, bytes(16 * n), b"", b"\xff" * 4 * n)
        lib.kvb_thread_end(th)
        lib.kvb_step_end(job, byref(core.Report()))
        lib.kvb_job_free(job)
        os.close(events)
    return keys


def base(db: str, records: int) -> dict:
    return {"protocol": 4, "engine": "py-lmdb", "label": "py-lmdb", "dir": db, "sync": "none",
            "dataset": dataset(records)}


def load(tmp: str, records: int) -> str:
    """A new py-lmdb database of `records` records in tmp, loaded by the worker; its directory."""
    db = os.path.join(tmp, "db")
    os.mkdir(db)
    step = {"step": "ops", "index": 1, "name": "load", "kind": "load", "count": records, "batch": 1000,
            "dist": {"name": "sequential", "n": records}, "rec_seed": 0}
    worker(dict(base(db, records), steps=[{"step": "open", "index": 0, "mode": "read-write"}, step,
                                          {"step": "close", "index": 2}]), os.path.join(tmp, "load.json"))
    return db


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--records", type=int, default=1_000_000)
    ap.add_argument("--gets", type=int, default=500_000)
    ap.add_argument("--repeat", type=int, default=7)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="kvbench-pybench-") as tmp:
        db = load(tmp, a.records)
        steps = [{"step": "open", "index": 0, "mode": "read-only"}, get_step(a.records, a.gets),
                 {"step": "close", "index": 2}]
        ours, bare, ours_cpu, bare_cpu = [], [], [], []
        for _ in range(a.repeat):
            r = next(e for e in worker(dict(base(db, a.records), steps=steps), os.path.join(tmp, "get.json"))
                     if e.get("index") == 1 and e["event"] == "step")
            assert r["mismatches"] == 0 and r["missing"] == 0 and r["errors"] == 0, r
            ours.append(r["ops"] / (r["wall_ns"] / 1e9))
            ours_cpu.append((r["usage"]["cpu_user_ns"] + r["usage"]["cpu_sys_ns"]) / r["ops"])
            ops_s, cpu = minimal(db, a.records, a.gets)
            bare.append(ops_s)
            bare_cpu.append(cpu)
    # On a shared machine other processes only ever slow a run down: the best run of each is the
    # least disturbed one; the median ratio of runs made back to back follows the load as it drifts.
    for name, runs in (("worker", ours), ("minimal", bare)):
        print(f"{name:8} best {max(runs):,.0f} ops/s, median {statistics.median(runs):,.0f} (wall clock; "
              f"runs: {', '.join(f'{x:,.0f}' for x in runs)})")
    paired = statistics.median(w / m for w, m in zip(ours, bare))  # each pair ran back to back
    pairs = sorted(w / m for w, m in zip(ours, bare))
    print(f"ratio    best/best {max(ours) / max(bare):.3f}, median of pairs {paired:.3f} "
          f"(pairs {pairs[0]:.3f}-{pairs[-1]:.3f})")
    cpu = statistics.median(m / w for w, m in zip(ours_cpu, bare_cpu))
    print(f"cpu      ns per get: worker median {statistics.median(ours_cpu):,.0f}, minimal median "
          f"{statistics.median(bare_cpu):,.0f}; median of pairs minimal/worker {cpu:.3f}")
    print(f"load     {' '.join(f'{x:.2f}' for x in os.getloadavg())} (1, 5, 15 min) at the end")


if __name__ == "__main__":
    main()
