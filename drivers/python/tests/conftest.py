import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[2]
VECTORS = REPO / "tests" / "vectors"
PLAN_TINY = VECTORS / "plan-tiny.kvbplan"
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


def run_worker(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(SRC) + os.pathsep + env.get("PYTHONPATH", "")
    return subprocess.run([sys.executable, "-m", "kvbench_driver", *args], capture_output=True, text=True,
                          timeout=timeout, env=env)


def tiny_job(engine: str, db_dir: Path, **over) -> dict:
    """A job over every phase of the tiny plan (see crates/kvbench-core/tests/vectors.rs)."""

    def ph(name, kind, plan_phase, **kw):
        return dict(name=name, kind=kind, plan_phase=plan_phase, **kw)

    job = {
        "protocol": 1,
        "engine": engine,
        "label": engine,
        "plan": str(PLAN_TINY),
        "dir": str(db_dir),
        "sync": "commit",
        "phases": [
            ph("load", "load", 0, batch=8),
            ph("get", "get", 1),
            ph("multi-get", "multi-get", 2, keys_per_request=4),
            ph("update", "update", 3, batch=2),
            ph("delete", "delete", 4),
            ph("mixed", "mixed", 5),
            ph("article-method", "get", 6, open_per="operation"),
            ph("get-seq-cold", "get", 7, cache="cold"),
            ph("scan", "scan", 8),
            ph("scan-short", "scan", 9),
            ph("get-zipfian", "get", 10),
            ph("get-latest", "get", 11, threads=2),
        ],
        "progress_ms": 0,
    }
    job.update(over)
    return job


def events_of(stdout: str) -> list:
    return [json.loads(line) for line in stdout.splitlines() if line.strip()]
