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

from . import __version__, core
from .engine import Options
from .engines import all_descriptors, find, names


def describe(d) -> dict:
    return {"name": d.name, "description": d.description, "version": d.version(), "capabilities": list(d.capabilities),
            "options": [o.to_json() for o in d.options], "available": d.unavailable() is None,
            "why": d.unavailable() or ""}


def events_fd() -> int:
    """Keep stdout for events: the returned descriptor is the old stdout, and anything else
    written to file descriptor 1 (a binding's C code, a stray print) goes to stderr."""
    sys.stdout.flush()
    fd = os.dup(1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return fd


class Events:
    """Events of one job: through the core once the job is open (its events and ours in one
    stream), written directly before that."""

    def __init__(self, fd: int):
        self.fd, self.lib, self.job = fd, None, None

    def __call__(self, event: dict) -> None:
        line = json.dumps(event, separators=(",", ":"), ensure_ascii=False)
        if self.job is None:
            os.write(self.fd, (line + "\n").encode())
        else:
            self.lib.kvb_emit(self.job, line.encode())

    def close(self) -> None:
        """Free the job (the core writes out its events)."""
        if self.job is not None:
            self.lib.kvb_job_free(self.job)
            self.job = None


class JobError(Exception):
    pass


def engine_of(path: str, spec: dict):
    """The job's engine descriptor and options; JobError when it cannot run here."""
    desc = find(spec["engine"])
    if desc is None:
        raise JobError(f"job file {path}: engine {spec['engine']} is not a Python engine (known: {', '.join(names())})")
    if desc.unavailable():
        raise JobError(f"job file {path}: engine {desc.name} unavailable: {desc.unavailable()}")
    try:
        return desc, Options(spec.get("options") or {})
    except ValueError as e:
        raise JobError(f"job file {path}: {e}") from e


def run(path: str, emit: Events) -> None:
    from .runner import Worker, calibrate

    lib = core.load()
    job = lib.kvb_job_open(path.encode(), emit.fd)
    emit.lib, emit.job = lib, job
    if lib.kvb_job_error(job):
        raise JobError(lib.kvb_job_error(job).decode())
    with open(path, encoding="utf-8") as f:  # the core has read and checked it
        spec = json.load(f)
    desc, options = engine_of(path, spec)
    python = f"{platform.python_implementation()} {platform.python_version()}"
    emit({"event": "hello", "protocol": lib.kvb_protocol(), "worker": f"python kvbench_driver {__version__} ({python})",
          "engine": desc.name, "version": desc.version(), "capabilities": list(desc.capabilities),
          "options": options.effective(), "timer_overhead_ns": calibrate()})
    Worker(lib, job, spec, desc, options).run()
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
    emit = Events(events_fd())
    try:
        run(args.job, emit)
        return 0
    except (JobError, core.MissingLibrary) as e:
        emit({"event": "error", "message": str(e)})
    except Exception as e:  # noqa: BLE001 - a bug in the worker: say so on the protocol
        traceback.print_exc(file=sys.stderr)
        emit({"event": "error", "message": f"python worker crashed: {type(e).__name__}: {e}"})
    finally:
        emit.close()
    return 1


if __name__ == "__main__":
    sys.exit(main())
