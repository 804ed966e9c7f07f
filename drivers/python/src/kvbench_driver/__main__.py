"""Command line of the Python worker (docs/protocol.md).

    python -m kvbench_driver --job JOB   run one job, JSON Lines events on stdout
    python -m kvbench_driver --list      the Python engines as a JSON array

Exit status: 0 after a `done` event, 1 after an `error` event, 2 for a bad command line.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import traceback

from . import __version__
from .engine import Options
from .engines import all_descriptors, find, names
from .job import PROTOCOL, JobError, load
from .plan import PlanError


def describe(d) -> dict:
    return {"name": d.name, "description": d.description, "version": d.version(), "capabilities": list(d.capabilities),
            "options": [o.to_json() for o in d.options], "available": d.unavailable() is None,
            "why": d.unavailable() or ""}


def events_stdout():
    """Keep stdout for events: anything else written to file descriptor 1 (a binding's C code,
    a stray print) goes to stderr."""
    sys.stdout.flush()
    out = os.fdopen(os.dup(1), "w", encoding="utf-8", buffering=1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return lambda event: out.write(json.dumps(event, separators=(",", ":"), ensure_ascii=False) + "\n")


def run(path: str, emit) -> None:
    from .runner import Worker, calibrate

    job = load(path)
    desc = find(job["engine"])
    try:
        if desc is None:
            raise JobError(f"engine {job['engine']} is not a Python engine (known: {', '.join(names())})")
        if desc.unavailable():
            raise JobError(f"engine {desc.name} unavailable: {desc.unavailable()}")
        options = Options(job["options"])
        worker = Worker(job, desc, options, emit)
    except (ValueError, PlanError) as e:
        raise JobError(f"job file {path}: {e}") from e
    python = f"{platform.python_implementation()} {platform.python_version()}"
    emit({"event": "hello", "protocol": PROTOCOL, "worker": f"python kvbench_driver {__version__} ({python})",
          "engine": desc.name, "version": desc.version(), "capabilities": list(desc.capabilities),
          "options": options.effective(), "timer_overhead_ns": calibrate()})
    for s in job["steps"]:
        r = worker.step(s)
        emit(r)
        if r["error"] and s.get("stop"):
            break
    if worker.engine is not None:  # a job that stopped early: close what is open, untimed
        worker.engine.close()
    emit({"event": "done"})


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m kvbench_driver", description="kvbench's Python worker")
    g = ap.add_mutually_exclusive_group(required=True)
    g.add_argument("--job", metavar="JOB", help="run the job file JOB; JSON Lines events on stdout")
    g.add_argument("--list", action="store_true", help="print the Python engines as a JSON array")
    g.add_argument("--version", action="store_true", help="print the worker's version")
    args = ap.parse_args(argv)
    if args.version or args.list:
        print(f"kvbench_driver {__version__}" if args.version else json.dumps(list(map(describe, all_descriptors())),
                                                                             indent=2))
        return 0
    emit = events_stdout()
    try:
        run(args.job, emit)
        return 0
    except JobError as e:
        emit({"event": "error", "message": str(e)})
    except Exception as e:  # noqa: BLE001 - a bug in the worker: say so on the protocol
        traceback.print_exc(file=sys.stderr)
        emit({"event": "error", "message": f"python worker crashed: {type(e).__name__}: {e}"})
    return 1


if __name__ == "__main__":
    sys.exit(main())
