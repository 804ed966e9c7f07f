"""The worker protocol (docs/protocol.md): the job file kvbench writes, and the JSON Lines events
a worker prints on stdout. Field names, order and types follow crates/kvbench-core/src/protocol.rs
and result.rs, so a line from this worker parses into the Rust types and serialises back to the
same JSON value.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any, Callable, Optional, TextIO

from .engine import OPEN_MODES, SYNC_MODES

PROTOCOL_VERSION = 1
PHASE_KINDS = ("load", "get", "multi-get", "scan", "update", "delete", "mixed")
WRITING_KINDS = ("load", "update", "delete", "mixed")
CACHE_MODES = ("warm", "cold")
OPEN_PER = ("phase", "operation")
STATUSES = ("ok", "failed", "n/a")


class JobError(ValueError):
    pass


@dataclass
class JobPhase:
    name: str
    kind: str
    plan_phase: int
    threads: int = 1
    batch: int = 1
    keys_per_request: int = 1
    cache: str = "warm"
    open_per: str = "phase"
    rate: Optional[float] = None


@dataclass
class Job:
    protocol: int
    engine: str
    label: str
    plan: str
    dir: str
    sync: str
    phases: list[JobPhase]
    options: dict[str, Any] = field(default_factory=dict)
    open_mode: str = "read-write"
    url: Optional[str] = None
    progress_ms: int = 200


def _is_uint(v: Any, bits: int = 64) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and 0 <= v < (1 << bits)


def _need(obj: dict, key: str, check: Callable[[Any], bool], what: str, where: str, default: Any = ...) -> Any:
    if key not in obj:
        if default is ...:
            raise JobError(f"{where}: missing field `{key}`")
        return default
    v = obj[key]
    if not check(v):
        raise JobError(f"{where}: `{key}` = {json.dumps(v)}: expected {what}")
    return v


def parse_job(obj: Any) -> Job:
    """A job from its JSON value, with serde's defaults; errors name the field."""
    if not isinstance(obj, dict):
        raise JobError("job: expected a JSON object")
    w = "job"
    is_str = lambda v: isinstance(v, str)  # noqa: E731
    protocol = _need(obj, "protocol", lambda v: _is_uint(v, 32), "an integer", w)
    engine = _need(obj, "engine", is_str, "a string", w)
    label = _need(obj, "label", is_str, "a string", w)
    options = _need(obj, "options", lambda v: isinstance(v, dict), "an object", w, {})
    plan = _need(obj, "plan", is_str, "a path", w)
    dir_ = _need(obj, "dir", is_str, "a path", w)
    sync = _need(obj, "sync", lambda v: v in SYNC_MODES, "one of " + ", ".join(SYNC_MODES), w)
    open_mode = _need(obj, "open_mode", lambda v: v in OPEN_MODES, "one of " + ", ".join(OPEN_MODES), w,
                      "read-write")
    url = _need(obj, "url", lambda v: v is None or isinstance(v, str), "a string or null", w, None)
    progress_ms = _need(obj, "progress_ms", _is_uint, "an integer", w, 200)
    raw_phases = _need(obj, "phases", lambda v: isinstance(v, list), "an array", w)
    phases = []
    for i, p in enumerate(raw_phases):
        pw = f"job: phases[{i}]"
        if not isinstance(p, dict):
            raise JobError(f"{pw}: expected an object")
        phases.append(JobPhase(
            name=_need(p, "name", is_str, "a string", pw),
            kind=_need(p, "kind", lambda v: v in PHASE_KINDS, "one of " + ", ".join(PHASE_KINDS), pw),
            plan_phase=_need(p, "plan_phase", _is_uint, "an integer", pw),
            threads=_need(p, "threads", lambda v: _is_uint(v, 32), "an integer", pw, 1),
            batch=_need(p, "batch", lambda v: _is_uint(v, 32), "an integer", pw, 1),
            keys_per_request=_need(p, "keys_per_request", lambda v: _is_uint(v, 32), "an integer", pw, 1),
            cache=_need(p, "cache", lambda v: v in CACHE_MODES, "warm or cold", pw, "warm"),
            open_per=_need(p, "open_per", lambda v: v in OPEN_PER, "phase or operation", pw, "phase"),
            rate=_need(p, "rate", lambda v: v is None or (isinstance(v, (int, float)) and v > 0),
                       "a positive number", pw, None),
        ))
    return Job(protocol=protocol, engine=engine, label=label, plan=plan, dir=dir_, sync=sync, phases=phases,
               options=options, open_mode=open_mode, url=url, progress_ms=progress_ms)


def load_job(path: str) -> Job:
    try:
        with open(path, encoding="utf-8") as f:
            obj = json.load(f)
    except OSError as e:
        raise JobError(f"job file {path}: {e.strerror or e}") from e
    except json.JSONDecodeError as e:
        raise JobError(f"job file {path}: not JSON: {e}") from e
    try:
        return parse_job(obj)
    except JobError as e:
        raise JobError(f"job file {path}: {e}") from e


# ---- results and events ----

def phase_result(name: str, kind: str) -> dict[str, Any]:
    """A PhaseResult with Rust's defaults, fields in Rust's order (reason, latency and notes are
    inserted in place by `finish_result`)."""
    return {
        "name": name,
        "kind": kind,
        "status": "ok",
        "reason": None,
        "ops": 0,
        "requests": 0,
        "unit": "op",
        "errors": 0,
        "mismatches": 0,
        "missing": 0,
        "elapsed_ns": 0,
        "wall_ns": 0,
        "ops_per_sec": 0.0,
        "latency": None,
        "threads": 1,
        "batch": 1,
        "cache": "warm",
        "cpu_user_ns": 0,
        "cpu_sys_ns": 0,
        "max_rss_kb": 0,
        "io_read_bytes": 0,
        "io_write_bytes": 0,
        "notes": [],
    }


def _finite(x: float) -> float:
    x = float(x)
    return x if math.isfinite(x) else 0.0


def finish_result(r: dict[str, Any]) -> dict[str, Any]:
    """Drop what serde skips (reason None, latency None, notes empty) and make floats floats."""
    out = {}
    for k, v in r.items():
        if k in ("reason", "latency") and v is None:
            continue
        if k == "notes" and not v:
            continue
        if k == "ops_per_sec":
            v = _finite(v)
        if k == "latency":
            v = dict(v, mean_ns=_finite(v["mean_ns"]), stdev_ns=_finite(v["stdev_ns"]))
        out[k] = v
    return out


def hello(worker: str, engine: str, version: str, capabilities: list[str], options: dict[str, Any],
          settings: dict[str, str], timer_overhead_ns: float) -> dict[str, Any]:
    return {
        "event": "hello",
        "protocol": PROTOCOL_VERSION,
        "worker": worker,
        "engine": engine,
        "version": version,
        "capabilities": capabilities,
        "options": dict(sorted(options.items())),
        "settings": dict(sorted(settings.items())),
        "timer_overhead_ns": _finite(timer_overhead_ns),
    }


def progress(phase: str, done: int, total: int) -> dict[str, Any]:
    return {"event": "progress", "phase": phase, "done": done, "total": total}


def phase_event(result: dict[str, Any]) -> dict[str, Any]:
    return {"event": "phase", "result": finish_result(result)}


def error(message: str, phase: Optional[str] = None) -> dict[str, Any]:
    return {"event": "error", "phase": phase, "message": message}


def done() -> dict[str, Any]:
    return {"event": "done"}


def to_line(event: dict[str, Any]) -> str:
    return json.dumps(event, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


class Emitter:
    """Writes one event per line and flushes it at once."""

    def __init__(self, out: TextIO):
        self.out = out

    def __call__(self, event: dict[str, Any]) -> None:
        self.out.write(to_line(event) + "\n")
        self.out.flush()


# ---- validation (used by the tests on every event this worker and the Rust worker print) ----

_LATENCY_INTS = ("min_ns", "p50_ns", "p90_ns", "p99_ns", "p999_ns", "max_ns")
_RESULT_INTS = ("ops", "requests", "errors", "mismatches", "missing", "elapsed_ns", "wall_ns", "cpu_user_ns",
                "cpu_sys_ns", "max_rss_kb", "io_read_bytes", "io_write_bytes")


def validate_event(ev: Any) -> list[str]:
    """Problems with one event as the Rust types would see them (an empty list when valid)."""
    p: list[str] = []
    if not isinstance(ev, dict):
        return ["not an object"]
    tag = ev.get("event")

    def fields(obj: dict, allowed: set[str], where: str) -> None:
        extra = set(obj) - allowed
        if extra:
            p.append(f"{where}: unknown fields {sorted(extra)}")

    def uint(obj: dict, k: str, where: str, bits: int = 64) -> None:
        if not _is_uint(obj.get(k), bits):
            p.append(f"{where}.{k}: expected an unsigned integer, got {obj.get(k)!r}")

    def flt(obj: dict, k: str, where: str) -> None:
        v = obj.get(k)
        if not isinstance(v, float) or not math.isfinite(v):
            p.append(f"{where}.{k}: expected a finite float, got {v!r}")

    def string(obj: dict, k: str, where: str) -> None:
        if not isinstance(obj.get(k), str):
            p.append(f"{where}.{k}: expected a string, got {obj.get(k)!r}")

    if tag == "hello":
        fields(ev, {"event", "protocol", "worker", "engine", "version", "capabilities", "options", "settings",
                    "timer_overhead_ns"}, "hello")
        uint(ev, "protocol", "hello", 32)
        for k in ("worker", "engine", "version"):
            string(ev, k, "hello")
        caps = ev.get("capabilities")
        if not isinstance(caps, list) or not all(isinstance(c, str) for c in caps):
            p.append("hello.capabilities: expected an array of strings")
        if not isinstance(ev.get("options"), dict):
            p.append("hello.options: expected an object")
        s = ev.get("settings")
        if not isinstance(s, dict) or not all(isinstance(v, str) for v in s.values()):
            p.append("hello.settings: expected an object of strings")
        flt(ev, "timer_overhead_ns", "hello")
    elif tag == "progress":
        fields(ev, {"event", "phase", "done", "total"}, "progress")
        string(ev, "phase", "progress")
        uint(ev, "done", "progress")
        uint(ev, "total", "progress")
    elif tag == "phase":
        fields(ev, {"event", "result"}, "phase")
        r = ev.get("result")
        if not isinstance(r, dict):
            return p + ["phase.result: expected an object"]
        w = "result"
        # latency_by_op: optional, mixed phases of the Rust worker (per operation kind).
        fields(r, set(phase_result("", "")) | {"latency_by_op"}, w)
        for k in ("name", "kind", "unit", "cache"):
            string(r, k, w)
        if r.get("status") not in STATUSES:
            p.append(f"{w}.status: {r.get('status')!r} is not one of {STATUSES}")
        if "reason" in r:
            string(r, "reason", w)
        for k in _RESULT_INTS:
            uint(r, k, w)
        uint(r, "threads", w, 32)
        uint(r, "batch", w, 32)
        flt(r, "ops_per_sec", w)
        if "notes" in r and (not isinstance(r["notes"], list) or not all(isinstance(n, str) for n in r["notes"])):
            p.append(f"{w}.notes: expected an array of strings")
        lat = r.get("latency")
        if lat is not None:
            if not isinstance(lat, dict):
                p.append(f"{w}.latency: expected an object")
            else:
                fields(lat, set(_LATENCY_INTS) | {"mean_ns", "stdev_ns", "hdr"}, f"{w}.latency")
                for k in _LATENCY_INTS:
                    uint(lat, k, f"{w}.latency")
                flt(lat, "mean_ns", f"{w}.latency")
                flt(lat, "stdev_ns", f"{w}.latency")
                string(lat, "hdr", f"{w}.latency")
    elif tag == "error":
        fields(ev, {"event", "phase", "message"}, "error")
        if ev.get("phase") is not None and not isinstance(ev.get("phase"), str):
            p.append("error.phase: expected a string or null")
        string(ev, "message", "error")
    elif tag == "done":
        fields(ev, {"event"}, "done")
    else:
        p.append(f"unknown event {tag!r}")
    return p
