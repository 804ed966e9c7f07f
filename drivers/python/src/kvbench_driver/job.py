"""The job file (docs/protocol.md; the Rust types are in crates/kvbench-core/src/job.rs).
kvbench writes and validates it, so the worker decides nothing about it: it fills in the fields a
job may leave out, and names a missing field or a name it branches on that it does not know."""

from __future__ import annotations

import json

PROTOCOL = 3
JOB = {"options": {}, "url": None, "token": None, "plan": None, "progress_ms": 200, "interval_ms": 1000}
OPS = {"threads": 1, "batch": 1, "keys_per_request": 1, "kinds": [], "thresholds": [], "rec_seed": 0, "kind_seed": 0,
       "len_seed": 0, "perm_seed": 0, "scan": {"min": 0, "max": 0}, "insert_base": 0, "last": 0, "rate": None,
       "open_per_op": False, "mode": "read-write", "finish": False, "verify": True, "stop": False}
DATASET = {"loaded": 0, "total": 0, "ordered": True, "pool_seed": 0, "value_seed": 0, "open_records": 0,
           "open_bytes": 0}
MODES = ("read-write", "read-only", "secondary")
KINDS = ("load", "get", "multi-get", "scan", "update", "insert", "delete", "rmw", "mixed")
DISTS = ("sequential", "shuffle", "load-order", "uniform", "hot", "zipfian", "latest")


class JobError(ValueError):
    pass


def need(obj: dict, where: str, name: str, choices: tuple = ()):
    """obj[name], which must be present and, when choices are given, one of them."""
    if name not in obj:
        raise JobError(f"{where}: missing field `{name}`")
    if choices and obj[name] not in choices:
        raise JobError(f"{where}.{name} = {json.dumps(obj[name])}: expected one of {', '.join(map(str, choices))}")
    return obj[name]


def check_step(s: dict, w: str) -> None:
    step = need(s, w, "step", ("open", "prepare", "close", "evict", "ops"))
    need(s, w, "index")
    if step == "ops":
        s.update({k: v for k, v in OPS.items() if k not in s})
        need(s, w, "name")
        need(s, w, "kind", KINDS)
        need(s, w, "count")
        need(need(s, w, "dist"), f"{w}.dist", "name", DISTS)
    if step in ("open", "ops"):
        need(s, w, "mode", MODES)


def check(job: dict) -> dict:
    if need(job, "job", "protocol") != PROTOCOL:
        raise JobError(f"job.protocol = {job['protocol']}: this worker speaks protocol {PROTOCOL}")
    job.update({k: v for k, v in JOB.items() if k not in job})
    need(job, "job", "sync", ("none", "commit", "always"))
    ds = need(job, "job", "dataset")
    ds.update({k: v for k, v in DATASET.items() if k not in ds})
    need(ds, "job.dataset", "generator", ("synthetic", "json-docs", "stored"))
    need(need(ds, "job.dataset", "key"), "job.dataset.key", "kind", ("u32be", "u64be", "decimal", "ycsb"))
    need(ds, "job.dataset", "value")
    for i, s in enumerate(need(job, "job", "steps")):
        check_step(s, f"job.steps[{i}]")
    return job


def load(path: str) -> dict:
    try:
        with open(path, encoding="utf-8") as f:
            return check(json.load(f))
    except OSError as e:
        raise JobError(f"job file {path}: {e.strerror or e}") from e
    except json.JSONDecodeError as e:
        raise JobError(f"job file {path}: not JSON: {e}") from e
    except (JobError, TypeError, AttributeError) as e:
        raise JobError(f"job file {path}: {e}") from e
