"""The job file of protocol 2 (docs/protocol.md; the Rust types are in
crates/kvbench-core/src/job.rs), checked field by field so that a bad job names what is wrong."""

from __future__ import annotations

import json
from typing import Any

PROTOCOL = 2
SYNC = ("none", "commit", "always")
MODES = ("read-write", "read-only", "secondary")
KINDS = ("load", "get", "multi-get", "scan", "update", "insert", "delete", "rmw", "mixed")
MIXED_KINDS = ("get", "update", "insert", "scan", "rmw", "delete")
DISTS = ("sequential", "shuffle", "uniform", "hot", "zipfian", "latest")
STEPS = ("open", "prepare", "close", "evict", "ops")


class JobError(ValueError):
    pass


def _uint(v):
    return isinstance(v, int) and not isinstance(v, bool) and 0 <= v < 1 << 64


def _num(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool)


CHECKS = {
    "int": (_uint, "an unsigned integer"),
    "pos": (lambda v: _uint(v) and v >= 1, "an integer >= 1"),
    "str": (lambda v: isinstance(v, str), "a string"),
    "str?": (lambda v: v is None or isinstance(v, str), "a string or null"),
    "bool": (lambda v: isinstance(v, bool), "true or false"),
    "obj": (lambda v: isinstance(v, dict), "an object"),
    "list": (lambda v: isinstance(v, list), "an array"),
    "num": (_num, "a number"),
    "rate": (lambda v: v is None or (_num(v) and v > 0), "null or a number > 0"),
}


def field(obj: dict, where: str, name: str, kind, default: Any = ...) -> Any:
    """obj[name] checked against kind (a CHECKS key or a tuple of allowed strings); a missing
    optional field is filled in with its default, as serde does."""
    if name not in obj:
        if default is ...:
            raise JobError(f"{where}: missing field `{name}`")
        obj[name] = default
        return default
    v = obj[name]
    ok, what = (lambda x: x in kind, "one of " + ", ".join(kind)) if isinstance(kind, tuple) else CHECKS[kind]
    if not ok(v):
        raise JobError(f"{where}.{name} = {json.dumps(v)}: expected {what}")
    return v


def check_ops(s: dict, w: str) -> None:
    field(s, w, "name", "str")
    kind = field(s, w, "kind", KINDS)
    field(s, w, "count", "int")
    for name in ("threads", "batch", "keys_per_request"):
        field(s, w, name, "pos", 1)
    for name in ("rec_seed", "kind_seed", "len_seed", "perm_seed", "insert_base", "last"):
        field(s, w, name, "int", 0)
    d = field(s, w, "dist", "obj")
    name = field(d, f"{w}.dist", "name", DISTS)
    n = field(d, f"{w}.dist", "n", "int")
    if n == 0 and s["count"] and kind not in ("load", "insert"):
        raise JobError(f"{w}.dist.n = 0: expected at least 1 record to draw from")
    needs = {"hot": ["record"], "zipfian": ["items", "zetan", "eta", "theta", "alpha"],
             "latest": ["zetan", "eta", "theta", "alpha"]}.get(name, [])
    for f in needs:
        field(d, f"{w}.dist", f, "int" if f in ("record", "items") else "num")
    kinds = field(s, w, "kinds", "list", [])
    thresholds = field(s, w, "thresholds", "list", [])
    if kind == "mixed" and (not kinds or len(kinds) != len(thresholds)):
        raise JobError(f"{w}: a mixed step needs `kinds` and as many `thresholds`")
    for i, k in enumerate(kinds):
        field({"k": k}, f"{w}.kinds[{i}]", "k", MIXED_KINDS)
        field({"t": thresholds[i]}, f"{w}.thresholds[{i}]", "t", "int")
    scan = field(s, w, "scan", "obj", {"min": 0, "max": 0})
    for f in ("min", "max"):
        field(scan, f"{w}.scan", f, "int")
    field(s, w, "rate", "rate", None)
    field(s, w, "mode", MODES, "read-write")
    for name in ("open_per_op", "finish", "stop"):
        field(s, w, name, "bool", False)
    field(s, w, "verify", "bool", True)


def check(job: Any) -> dict:
    if not isinstance(job, dict):
        raise JobError("job: expected a JSON object")
    w = "job"
    if field(job, w, "protocol", "int") != PROTOCOL:
        raise JobError(f"job.protocol = {job['protocol']}: this worker speaks protocol {PROTOCOL}")
    for name in ("engine", "label", "dir"):
        field(job, w, name, "str")
    field(job, w, "sync", SYNC)
    field(job, w, "options", "obj", {})
    for name in ("url", "token", "plan"):
        field(job, w, name, "str?", None)
    field(job, w, "progress_ms", "int", 200)
    field(job, w, "interval_ms", "pos", 1000)
    ds = field(job, w, "dataset", "obj")
    field(ds, "job.dataset", "generator", ("synthetic", "json-docs", "stored"))
    key = field(ds, "job.dataset", "key", "obj")
    field(key, "job.dataset.key", "kind", ("u32be", "u64be", "decimal", "ycsb"))
    field(key, "job.dataset.key", "width", "int", 0)
    value = field(ds, "job.dataset", "value", "obj")
    if field(value, "job.dataset.value", "min", "int") > field(value, "job.dataset.value", "max", "int"):
        raise JobError("job.dataset.value: min is larger than max")
    field(value, "job.dataset.value", "content", ("printable", "random"), "printable")
    for name in ("loaded", "total", "pool_seed", "value_seed", "open_records", "open_bytes"):
        field(ds, "job.dataset", name, "int", 0)
    field(ds, "job.dataset", "ordered", "bool", True)
    for i, s in enumerate(field(job, w, "steps", "list")):
        sw = f"job.steps[{i}]"
        if not isinstance(s, dict):
            raise JobError(f"{sw}: expected an object")
        step = field(s, sw, "step", STEPS)
        field(s, sw, "index", "int")
        if step == "open":
            field(s, sw, "mode", MODES)
        if step == "ops":
            check_ops(s, sw)
    return job


def load(path: str) -> dict:
    try:
        with open(path, encoding="utf-8") as f:
            job = json.load(f)
    except OSError as e:
        raise JobError(f"job file {path}: {e.strerror or e}") from e
    except json.JSONDecodeError as e:
        raise JobError(f"job file {path}: not JSON: {e}") from e
    try:
        return check(job)
    except JobError as e:
        raise JobError(f"job file {path}: {e}") from e
