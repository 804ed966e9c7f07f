"""The job file of protocol 2 (docs/protocol.md; the Rust types are in crates/kvbench-core/src/job.rs).
kvbench writes it, so only what a wrong job would silently mis-measure is checked: the protocol,
every name the worker branches on, and the counts it divides by; a missing field is named."""

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


class JobError(ValueError):
    pass


def need(obj: dict, where: str, name: str, choices: tuple = ()):
    """obj[name], which must be present and, when choices are given, one of them."""
    if name not in obj:
        raise JobError(f"{where}: missing field `{name}`")
    if choices and obj[name] not in choices:
        raise JobError(f"{where}.{name} = {json.dumps(obj[name])}: expected one of {', '.join(map(str, choices))}")
    return obj[name]


def positive(obj: dict, where: str, name: str) -> None:
    """A count the worker divides by or loops over: zero would hang or divide by zero."""
    if not (isinstance(obj[name], int) and obj[name] >= 1):
        raise JobError(f"{where}.{name} = {json.dumps(obj[name])}: expected an integer >= 1")


def check_ops(s: dict, w: str) -> None:
    for k, v in OPS.items():
        s.setdefault(k, v)
    need(s, w, "name")
    kind, count, dist = need(s, w, "kind", KINDS), need(s, w, "count"), need(s, w, "dist")
    for name in ("threads", "batch", "keys_per_request"):
        positive(s, w, name)
    if s["rate"] is not None and not s["rate"] > 0:
        raise JobError(f"{w}.rate = {s['rate']}: expected null or a number > 0")
    need(dist, f"{w}.dist", "name", ("sequential", "shuffle", "load-order", "uniform", "hot", "zipfian", "latest"))
    if need(dist, f"{w}.dist", "n") == 0 and count and kind not in ("load", "insert"):
        raise JobError(f"{w}.dist.n = 0: expected at least 1 record to draw from")
    if kind == "mixed" and not 0 < len(s["kinds"]) == len(s["thresholds"]):
        raise JobError(f"{w}: a mixed step needs `kinds` and as many `thresholds`")
    for k in s["kinds"]:
        need({"kinds": k}, w, "kinds", ("get", "update", "insert", "scan", "rmw", "delete"))
    need(s, w, "mode", MODES)


def check(job: dict) -> dict:
    if need(job, "job", "protocol") != PROTOCOL:
        raise JobError(f"job.protocol = {job['protocol']}: this worker speaks protocol {PROTOCOL}")
    for k, v in JOB.items():
        job.setdefault(k, v)
    need(job, "job", "sync", ("none", "commit", "always"))
    positive(job, "job", "interval_ms")
    ds = need(job, "job", "dataset")
    for k, v in DATASET.items():
        ds.setdefault(k, v)
    need(ds, "job.dataset", "generator", ("synthetic", "json-docs", "stored"))
    need(need(ds, "job.dataset", "key"), "job.dataset.key", "kind", ("u32be", "u64be", "decimal", "ycsb"))
    value = need(ds, "job.dataset", "value")
    if need(value, "job.dataset.value", "min") > need(value, "job.dataset.value", "max"):
        raise JobError("job.dataset.value: min is larger than max")
    for i, s in enumerate(need(job, "job", "steps")):
        w = f"job.steps[{i}]"
        step = need(s, w, "step", ("open", "prepare", "close", "evict", "ops"))
        need(s, w, "index")
        if step == "open":
            need(s, w, "mode", MODES)
        elif step == "ops":
            check_ops(s, w)
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
