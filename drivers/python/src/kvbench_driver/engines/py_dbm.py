"""`py-dbm`: the standard library's `dbm`, the key-value files every Python has.

`dbm.open(path, "c")` picks the first module this Python was built with: `dbm.sqlite3` (Python
3.13 and later), `dbm.gnu` (needs `_gdbm`, i.e. libgdbm at Python's build), `dbm.ndbm`, and
`dbm.dumb` (pure Python, always there). Option `backend = "auto"` takes that same choice, and
settings say which module ran: Python builds without `_gdbm` (pyenv's without libgdbm-dev) get
`dbm.dumb`. No backend has batches or an ordered scan: a batch is a loop of writes. Calls go
through one lock: `dbm.dumb` is Python code whose index and data file a write changes in
several steps.
"""

from __future__ import annotations

import importlib
import threading
from typing import Optional

from ..engine import Descriptor, Engine, OpenArgs, OptionError, OptionSpec, Reader, Unsupported

# dbm's own order of preference (dbm._names, with dbm.sqlite3 first where it exists).
ORDER = ("sqlite3", "gnu", "ndbm", "dumb")


def importable(backend: str):
    try:
        return importlib.import_module(f"dbm.{backend}")
    except ImportError:
        return None


def chosen(backend: str) -> str:
    """The backend `auto` stands for: dbm.open's choice for a new file on this Python."""
    if backend != "auto":
        return backend
    return next(b for b in ORDER if importable(b) is not None)


def version() -> str:
    import sys

    have = [f"dbm.{b}" for b in ORDER if importable(b) is not None]
    return f"dbm (Python {sys.version.split()[0]} standard library; has {', '.join(have)})"


def sync_plan(backend: str, sync: str) -> tuple[str, bool, str]:
    """(open flag suffix, sync() after each batch, what the settings say) for a backend."""
    if backend == "gnu":
        return {
            "none": ("f", False, "open flag 'f' (GDBM fast mode: no sync; sync() at close)"),
            "commit": ("", True, "sync() after every batch (gdbm_sync: fsync)"),
            "always": ("s", False, "open flag 's' (GDBM_SYNC: every write synced)"),
        }[sync]
    if backend == "sqlite3":
        return "", False, "every write is its own committed SQLite transaction (dbm.sqlite3 autocommits)"
    if sync == "none":
        return "", False, f"none (dbm.{backend} never fsyncs; its index is written at close)"
    if backend == "dumb":
        # The most a dbm.dumb user can ask for; the settings say it is not durable.
        return "", True, "sync() after every batch: rewrites the index file, no fsync (dbm.dumb cannot commit durably)"
    return "", False, f"no sync call (dbm.{backend} has none): not durable"


class DbmEngine(Engine):
    def __init__(self, args: OpenArgs):
        if args.mode == "secondary":
            raise Unsupported("secondary open (dbm has no secondary instances)")
        backend = chosen(args.options.text("backend") or "auto")
        module = importable(backend)
        if module is None:
            raise OptionError(f"dbm backend `{backend}`: this Python has no dbm.{backend} "
                              f"(it has {version()}); use backend = \"auto\"")
        read_only = self.read_only = args.mode == "read-only"
        suffix, self.sync_each, text = ("", False, "read-only open (flag 'r')") if read_only \
            else sync_plan(backend, args.sync)
        self.db = module.open(args.file("kv"), ("r" if read_only else "c") + suffix)
        self.lock = threading.Lock()
        self._settings = {
            "backend": f"dbm.{backend}" + (" (auto: dbm.open's choice on this Python)"
                                           if (args.options.text("backend") or "auto") == "auto" else ""),
            "sync": text,
            "write_batch": "none: a loop of db[key] = value / del db[key], under one lock",
            "reader": "db.get under the same lock (calls are serialised)",
            "binding": version(),
        }

    def write(self, batch: list[tuple[bytes, Optional[bytes]]]) -> None:
        db = self.db
        with self.lock:
            for k, v in batch:
                if v is not None:
                    db[k] = v
                elif k in db:
                    del db[k]
            if self.sync_each:
                db.sync()

    def reader(self) -> Reader:
        return DbmReader(self.db, self.lock)

    def close(self) -> None:
        with self.lock:
            if not self.read_only and hasattr(self.db, "sync"):
                self.db.sync()
            self.db.close()

    def settings(self) -> dict[str, str]:
        return dict(self._settings)


class DbmReader(Reader):
    def __init__(self, db, lock: threading.Lock):
        dbget = db.get

        def get(key: bytes) -> Optional[bytes]:
            with lock:
                return dbget(key)

        self.get = get


DESCRIPTOR = Descriptor(
    name="py-dbm",
    description="dbm from Python (standard library): dbm.open's backend (gnu, ndbm, sqlite3 or dumb)",
    capabilities=("read-only", "persistent", "delete"),
    options=(
        OptionSpec("backend", "enum", "auto",
                   "dbm module: auto (dbm.open's choice: sqlite3, gnu, ndbm, then dumb) or one by name",
                   ("auto", "sqlite3", "gnu", "ndbm", "dumb")),
    ),
    version=version,
    unavailable=lambda: None,
    open=DbmEngine,
)
