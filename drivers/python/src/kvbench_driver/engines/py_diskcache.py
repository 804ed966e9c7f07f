"""`py-diskcache`: diskcache (PyPI `diskcache`), a dict-like disk cache over SQLite and files.

One `diskcache.Cache` in the job directory. kvbench uses it as a store: eviction is off
(`eviction_policy="none"`; its default evicts the least recently stored items beyond 1 GiB,
and an evicted record would read as missing). Values under `disk_min_file_size` (32 KiB) are
rows of its SQLite table, larger ones are files. A write batch is one `Cache.transact()`; `sync`
maps to its `sqlite_synchronous` setting (its default, NORMAL, does not fsync a WAL commit).
Each thread reads through its own SQLite connection (diskcache keeps one per thread);
`get` is the cache's own method.
"""

from __future__ import annotations

from typing import Optional

from ..engine import Descriptor, Engine, OpenArgs, OptionError, OptionSpec, Reader, Unsupported
from ._util import dist_version, try_import

diskcache, _missing = try_import("diskcache")
# sqlite_synchronous per sync mode: 0 OFF, 2 FULL (an fsync at every commit in WAL mode).
SYNC = {
    "none": (0, "sqlite_synchronous=0 (OFF: no fsync)"),
    "commit": (2, "sqlite_synchronous=2 (FULL: fsync at every commit)"),
    "always": (2, "sqlite_synchronous=2 (FULL: fsync at every commit; a batch is one transaction)"),
}


def version() -> str:
    if diskcache is None:
        return "not installed"
    import sqlite3

    return f"diskcache {dist_version('diskcache')} (SQLite {sqlite3.sqlite_version})"


class DiskcacheEngine(Engine):
    def __init__(self, args: OpenArgs):
        if args.mode != "read-write":
            raise Unsupported(f"{args.mode} open (diskcache has no {args.mode} mode)")
        level, text = SYNC[args.sync]
        settings = {"eviction_policy": "none", "sqlite_synchronous": level}
        cache_size = args.options.int("sqlite_cache_size")
        if cache_size is not None:
            if cache_size <= 0:
                raise OptionError(f"diskcache sqlite_cache_size must be positive bytes, got {cache_size}")
            settings["sqlite_cache_size"] = -(-cache_size // 4096)  # pages of 4 KiB
        self.cache = diskcache.Cache(args.dir, **settings)
        pages = self.cache.sqlite_cache_size
        self._settings = {
            "sync": text,
            "eviction_policy": "none (kvbench's choice: the default evicts beyond size_limit)",
            "sqlite_cache_size": f"{pages} pages per connection",
            "journal_mode": str(self.cache.sqlite_journal_mode),
            "disk_min_file_size": f"{self.cache.disk_min_file_size} bytes (smaller values are SQLite rows)",
            "write_batch": "one Cache.transact() per batch; Cache.set / Cache.delete inside",
            "reader": "Cache.get through the thread's own SQLite connection",
            "binding": version(),
        }

    def write(self, batch: list[tuple[bytes, Optional[bytes]]]) -> None:
        if len(batch) == 1:
            self.write_one(*batch[0])
            return
        with self.cache.transact():
            for k, v in batch:
                self.write_one(k, v)

    def write_one(self, k: bytes, v: Optional[bytes]) -> None:
        if v is None:
            self.cache.delete(k)
        else:
            self.cache.set(k, v)

    def reader(self) -> Reader:
        return DiskcacheReader(self.cache)

    def close(self) -> None:
        self.cache.close()

    def settings(self) -> dict[str, str]:
        return dict(self._settings)


class DiskcacheReader(Reader):
    def __init__(self, cache):
        self.cache = cache
        self.get = cache.get

    def close(self) -> None:
        # Closes the calling thread's connection: the reader's own.
        self.cache.close()


DESCRIPTOR = Descriptor(
    name="py-diskcache",
    description="diskcache from Python: a disk cache over SQLite (small values) and files, eviction off",
    capabilities=("batch", "persistent", "delete"),
    options=(
        OptionSpec("sqlite_cache_size", "int", "",
                   "SQLite page cache per connection in bytes (default: diskcache's 8192 pages = 32 MiB)"),
    ),
    version=version,
    unavailable=lambda: _missing,
    open=DiskcacheEngine,
)
