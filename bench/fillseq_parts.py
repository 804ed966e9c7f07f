#!/usr/bin/env python3
"""Where a whole kvbench process's time goes beside db_bench's, for fillseq (docs/methodology.md,
"db_bench beside kvbench"): alternates, round after round, db_bench's `fillseq`, kvbench's
one-row fillseq scenario and the same scenario with 1 record, as whole processes (wall clock
around each), with bench/db_bench.sh's matched options (1 M records, 16-byte keys, 100-byte
values, snappy, WAL on, no sync, 8 MiB cache, no bloom filter), and prints the medians of the
rounds: each process's wall, db_bench's reported fillseq time, and kvbench's open, load (wall and
inside the timed puts), close (the WAL sync) and the time outside its engine steps.

Usage: bench/fillseq_parts.py [ROUNDS (9)]   (KVBENCH=target/release/kvbench DATA=/var/tmp
DB_BENCH=/usr/bin/db_bench RECORDS=1000000)"""
import glob
import json
import os
import re
import shutil
import statistics as st
import subprocess
import sys
import tempfile
import time

ROUNDS = int(sys.argv[1]) if len(sys.argv) > 1 else 9
KV = os.environ.get("KVBENCH", "target/release/kvbench")
DB_BENCH = os.environ.get("DB_BENCH", "/usr/bin/db_bench")
RECORDS = int(os.environ.get("RECORDS", "1000000"))
W = tempfile.mkdtemp(prefix="kvbench-fillseq.", dir=os.environ.get("DATA", "/var/tmp"))
SCENARIO = """name = "db-bench"
sync = "none"
[[engine]]
name = "rocksdb"
options = { block_cache = 8388608, compression = "snappy", bloom_bits = 0, wal = true, pipelined_write = false, direct_reads = false, direct_io_for_flush_and_compaction = false, statistics = true }
[dataset]
records = %d
key = { kind = "decimal", width = 16 }
value = { size = 100 }
[[phase]]
kind = "load"
distribution = "sequential"
batch = 1
"""
DB = [DB_BENCH, f"--db={W}/db_bench", "--benchmarks=fillseq", f"--num={RECORDS}", "--key_size=16",
      "--value_size=100", "--cache_size=8388608", "--compression_type=snappy", "--compression_ratio=1",
      "--disable_wal=false", "--sync=false", "--batch_size=1", "--bloom_bits=0",
      "--enable_pipelined_write=false", "--statistics=true", "--seed=42"]


def timed(cmd):
    t = time.monotonic()
    out = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.monotonic() - t
    if out.returncode:
        sys.exit(out.stdout + out.stderr)
    return wall, out.stdout


def kvbench(name):
    shutil.rmtree(f"{W}/kv", ignore_errors=True)
    wall, _ = timed([KV, "run", f"{W}/{name}.toml", "--data-dir", f"{W}/kv/data", "--plan-dir", f"{W}/plans",
                     "--out", f"{W}/kv/out", "--no-progress", "--format", "json"])
    engine = json.load(open(glob.glob(f"{W}/kv/out/2*.json")[0]))["engines"][0]
    ph = {p["name"]: p for p in engine["phases"]}
    s = {"wall": wall, "engine": engine["wall_ns"] / 1e9, "open": ph["open"]["elapsed_ns"] / 1e9,
         "load": ph["load"]["elapsed_ns"] / 1e9, "load_wall": ph["load"]["wall_ns"] / 1e9,
         "close": ph["close"]["elapsed_ns"] / 1e9}
    s["rest"] = s["engine"] - s["open"] - s["load_wall"] - s["close"]
    return s


def db_bench():
    shutil.rmtree(f"{W}/db_bench", ignore_errors=True)
    wall, out = timed(DB)
    return {"wall": wall, "fillseq": float(re.search(r"fillseq\s+:.*?([\d.]+) seconds", out).group(1))}


def main():
    open(f"{W}/fill.toml", "w").write(SCENARIO % RECORDS)
    open(f"{W}/one.toml", "w").write(SCENARIO % 1)
    rounds = []
    for r in range(ROUNDS):
        steps = [("db", db_bench), ("kv", lambda: kvbench("fill")), ("one", lambda: kvbench("one"))]
        res = {name: run() for name, run in (steps if r % 2 == 0 else steps[::-1])}
        res["load_average"] = os.getloadavg()[0]
        rounds.append(res)
    med = lambda f: st.median(f(x) for x in rounds)
    print(f"== fillseq as whole processes, {RECORDS} records, median of {ROUNDS} rounds (seconds)")
    for label, f in [
        ("db_bench whole process", lambda x: x["db"]["wall"]),
        ("db_bench's reported fillseq", lambda x: x["db"]["fillseq"]),
        ("db_bench outside its fillseq", lambda x: x["db"]["wall"] - x["db"]["fillseq"]),
        ("kvbench whole process", lambda x: x["kv"]["wall"]),
        ("kvbench outside the engine steps", lambda x: x["kv"]["wall"] - x["kv"]["engine"]),
        ("kvbench worker between steps", lambda x: x["kv"]["rest"]),
        ("kvbench open", lambda x: x["kv"]["open"]),
        ("kvbench load, wall", lambda x: x["kv"]["load_wall"]),
        ("kvbench load, inside the puts", lambda x: x["kv"]["load"]),
        ("kvbench close (WAL sync)", lambda x: x["kv"]["close"]),
        ("kvbench with 1 record, whole process", lambda x: x["one"]["wall"]),
        ("wall ratio kvbench / db_bench", lambda x: x["kv"]["wall"] / x["db"]["wall"]),
        ("load average", lambda x: x["load_average"]),
    ]:
        print(f"{label:38s} {med(f):8.3f}")


try:
    main()
finally:
    shutil.rmtree(W, ignore_errors=True)
