"""Command line of the Python worker.

    python -m kvbench_driver --job JOB   run one job, JSON Lines events on stdout
    python -m kvbench_driver --list      the Python engines as a JSON array

Exit status: 0 after a `done` event, 1 after an `error` event, 2 for a bad command line.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import traceback

from . import __version__
from .engines import all_descriptors, find
from .protocol import Emitter, JobError, error, load_job, to_line


def list_engines() -> list[dict]:
    out = []
    for d in all_descriptors():
        why = d.unavailable()
        out.append({
            "name": d.name,
            "description": d.description,
            "version": d.version(),
            "capabilities": d.capabilities.names(),
            "options": [o.to_json() for o in d.options],
            "available": why is None,
            "why": why or "",
        })
    return out


def _protocol_stdout():
    """Keep stdout for events only: anything else written to file descriptor 1 (a binding's C
    code, a stray print) goes to stderr instead."""
    sys.stdout.flush()
    events_fd = os.dup(1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return os.fdopen(events_fd, "w", encoding="utf-8", buffering=1)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m kvbench_driver", description="kvbench's Python worker")
    g = ap.add_mutually_exclusive_group(required=True)
    g.add_argument("--job", metavar="JOB", help="run the job file JOB; JSON Lines events on stdout")
    g.add_argument("--list", action="store_true", help="print the Python engines as a JSON array")
    g.add_argument("--version", action="store_true", help="print the worker's version")
    args = ap.parse_args(argv)
    if args.version:
        print(f"kvbench_driver {__version__}")
        return 0
    if args.list:
        print(json.dumps(list_engines(), indent=2))
        return 0

    out = _protocol_stdout()
    emit = Emitter(out)
    try:
        job = load_job(args.job)
    except JobError as e:
        emit(error(str(e)))
        return 1
    from .runner import run_job

    try:
        ok = run_job(job, find(job.engine), emit)
    except Exception as e:  # noqa: BLE001 - a bug in the worker: say so on the protocol
        traceback.print_exc(file=sys.stderr)
        out.write(to_line(error(f"python worker crashed: {type(e).__name__}: {e}")) + "\n")
        out.flush()
        return 1
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
