import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[2]
VECTORS = REPO / "tests" / "vectors"
SRC = HERE.parent / "src"


def allow_missing() -> bool:
    return bool(os.environ.get("KVBENCH_ALLOW_MISSING"))


def descriptor_or_skip(name: str):
    """The engine's descriptor; an engine that cannot run here fails the test (CI installs them
    all) unless KVBENCH_ALLOW_MISSING is set, as in the Rust conformance tests."""
    from kvbench_driver.engines import find

    d = find(name)
    assert d is not None, f"engine {name} is not in the registry"
    why = d.unavailable()
    if why is not None:
        if allow_missing():
            pytest.skip(f"{name}: {why}")
        pytest.fail(f"engine {name} unavailable: {why}")
    return d


def resolved(desc, given: dict | None = None):
    """desc's options as kvbench writes them into a job: `given`, every other option at its
    declared default, sizes as integers. In a run kvbench resolves them
    (crates/kvbench-model/src/options.rs); engine tests have no kvbench, so this test aid
    fills the defaults the same way."""
    from kvbench_driver.engine import Options

    return Options({s.name: declared_default(s) for s in desc.options} | (given or {}))


def declared_default(spec):
    if spec.default == "":
        return None
    if spec.kind == "bool":
        return spec.default == "true"
    if spec.kind != "int":
        return spec.default
    shift = {"k": 10, "m": 20, "g": 30}.get(spec.default[-1], 0)
    return int(spec.default.rstrip("kmg")) << shift


def run_worker(*args: str, timeout: float = 120, env: dict | None = None) -> subprocess.CompletedProcess:
    env = dict(os.environ, **(env or {}))
    env["PYTHONPATH"] = str(SRC) + os.pathsep + env.get("PYTHONPATH", "")
    return subprocess.run([sys.executable, "-m", "kvbench_driver", *args], capture_output=True, text=True,
                          timeout=timeout, env=env)


MASK = (1 << 64) - 1
# YCSB's zeta over its 10^10 items for theta 0.99 (ZipfianGenerator.ZETAN).
ZETAN_ITEMS = 26.46902820178302


def zeta(n: int, theta: float = 0.99) -> float:
    z = 0.0
    for i in range(n):
        z += 1.0 / math.pow(i + 1, theta)
    return z


def zipf_consts(n: int, theta: float = 0.99) -> dict:
    """zetan, eta, theta, alpha as YCSB's ZipfianGenerator computes them for n items."""
    zn = zeta(n, theta)
    eta = (1 - math.pow(2.0 / n, 1 - theta)) / (1 - zeta(2, theta) / zn)
    return {"zetan": zn, "eta": eta, "theta": theta, "alpha": 1 / (1 - theta)}


def thresholds(fractions: list) -> list:
    out, acc = [], 0.0
    for f in fractions:
        acc += f
        out.append(min(int(acc * 2 ** 64), MASK))
    return out


def ops(index: int, kind: str, count: int, dist: dict, seed: int = 1, **kw) -> dict:
    step = {"step": "ops", "index": index, "name": f"{kind}-{index}", "kind": kind, "count": count, "dist": dist,
            "rec_seed": seed * 7919, "kind_seed": seed * 104729, "len_seed": seed * 1299709,
            "perm_seed": seed * 15485863}
    step.update(kw)
    return step


def job(engine: str, db_dir: Path, steps: list, loaded: int = 200, total: int = 300, **over) -> dict:
    """A job running `steps`, which are numbered in place (ops steps are named `<kind>-<index>`)."""
    for i, s in enumerate(steps):
        s["index"] = i
        if s["step"] == "ops":
            s["name"] = f"{s['kind']}-{i}"
    j = {
        "protocol": 4, "engine": engine, "label": engine, "options": {}, "dir": str(db_dir), "sync": "none",
        "url": None, "token": None, "plan": None, "progress_ms": 5, "interval_ms": 50,
        "dataset": {"generator": "synthetic", "key": {"kind": "decimal", "width": 8},
                    "value": {"min": 10, "max": 60, "content": "printable"}, "loaded": loaded, "total": total,
                    "ordered": True, "pool_seed": 11, "value_seed": 12, "open_records": total,
                    "open_bytes": total * 80},
        "steps": steps,
    }
    j.update(over)
    return j


def every_kind(loaded: int = 200, total: int = 300) -> list:
    """Steps covering every step type and op kind on one engine that stays open."""
    mix = {"kinds": ["get", "update", "insert", "scan", "rmw", "delete"], "scan": {"min": 1, "max": 5},
           "thresholds": thresholds([0.5, 0.2, 0.05, 0.1, 0.1, 0.05])}
    return [
        {"step": "open", "mode": "read-write"},
        {"step": "prepare"},
        ops(0, "load", loaded, {"name": "shuffle", "n": loaded}, batch=16, finish=True),
        ops(0, "get", 300, {"name": "uniform", "n": loaded}, seed=2),
        ops(0, "multi-get", 200, {"name": "zipfian", "n": loaded, "items": 10 ** 10 + 1, "zetan": ZETAN_ITEMS,
                                   **{k: v for k, v in zipf_consts(10 ** 3).items() if k != "zetan"}},
            seed=3, keys_per_request=4, last=loaded - 1),
        ops(0, "scan", 40, {"name": "uniform", "n": total}, seed=4, scan={"min": 1, "max": 12}),
        ops(0, "update", 120, {"name": "uniform", "n": loaded}, seed=5, batch=4),
        ops(0, "insert", 20, {"name": "sequential", "n": total}, seed=6, batch=5, insert_base=loaded),
        ops(0, "rmw", 80, {"name": "latest", "n": loaded + 20, "count": loaded + 19,
                            **zipf_consts(loaded + 19)}, seed=7, last=loaded + 19),
        ops(0, "delete", 10, {"name": "sequential", "n": loaded, "start": 3}, seed=8),
        ops(0, "mixed", 400, {"name": "hot", "n": loaded, "record": 5}, seed=9, insert_base=loaded + 20, **mix),
        ops(0, "mixed", 400, {"name": "uniform", "n": loaded}, seed=10, threads=3, insert_base=loaded + 60, **mix),
        ops(0, "get", 400, {"name": "uniform", "n": loaded}, seed=11, threads=3, rate=40000.0),
        ops(0, "get", 50, {"name": "sequential", "n": loaded}, seed=12),  # a warm-up is a step of its own
        ops(0, "get", 100, {"name": "sequential", "n": loaded}, seed=12),
        ops(0, "scan", 5, {"name": "uniform", "n": total}, seed=13),
        {"step": "close"},
    ]


def events_of(stdout: str) -> list:
    return [json.loads(line) for line in stdout.splitlines() if line.strip()]
