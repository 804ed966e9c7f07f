"""`py-lmdb`: LMDB through py-lmdb (PyPI package `lmdb`, which bundles its own LMDB).

One environment in the job directory, main database. Each write batch is one write transaction
(`with env.begin(write=True)`), or with `transaction = load` a load into an empty environment is
one write transaction for every put, committed by finish-load inside the load's timing (article
000's `with env.begin(write=True)` around its whole write). `sync = none` opens with sync=False
and metasync=False (MDB_NOSYNC) and syncs at close. A reader is one read transaction; `get` is
the transaction's own method. Read-only opens use readonly=True; LMDB has no secondary instances.
"""

from __future__ import annotations

from itertools import islice
from typing import Iterator, Optional

from ..engine import Descriptor, Engine, OpenArgs, OptionError, OptionSpec, Reader, Unsupported
from ._util import dist_version, try_import

lmdb, _missing = try_import("lmdb")
MAX_READERS = 126


def version() -> str:
    if lmdb is None:
        return "not installed"
    lib = ".".join(str(x) for x in lmdb.version())
    return f"py-lmdb {dist_version('lmdb')} (LMDB {lib})"


class LmdbEngine(Engine):
    def __init__(self, args: OpenArgs):
        o = args.options
        if args.mode == "secondary":
            raise Unsupported("secondary open (LMDB has no secondary instances)")
        self.read_only = args.mode == "read-only"
        map_size = o.int("map_size")
        if map_size is None:
            map_size = max(1 << 30, args.expected_bytes * 4)
        elif map_size <= 0:
            raise OptionError(f"lmdb map_size must be positive, got {map_size}")
        self.no_sync = args.sync == "none" and not self.read_only
        self.readahead = not o.bool("no_readahead")
        self.write_map = o.bool("write_map") and not self.read_only
        self.map_size = map_size
        self.env = lmdb.open(
            args.dir,
            map_size=map_size,
            subdir=True,
            readonly=self.read_only,
            create=not self.read_only,
            sync=not self.no_sync,
            metasync=not self.no_sync,
            readahead=self.readahead,
            writemap=self.write_map,
            max_readers=MAX_READERS,
            lock=True,
        )
        self.readers: list[LmdbReader] = []
        # Written since open: only then does a no-sync environment need a sync at close.
        self.dirty = False
        # transaction = load: the first load (an empty environment) goes into one transaction.
        self.one_txn = o.text("transaction") == "load" and not self.read_only and self.env.stat()["entries"] == 0
        self.txn = None

    def write(self, batch: list[tuple[bytes, Optional[bytes]]]) -> None:
        self.dirty = True
        if self.one_txn:
            if self.txn is None:
                self.txn = self.env.begin(write=True)
            put_all(self.txn, batch)
            return
        with self.env.begin(write=True) as txn:
            put_all(txn, batch)

    def finish_load(self) -> None:
        if self.txn is not None:
            self.txn.commit()
        self.txn, self.one_txn = None, False

    def reader(self) -> Reader:
        r = LmdbReader(self.env)
        self.readers.append(r)
        return r

    def close(self) -> None:
        for r in self.readers:
            r.close()
        self.readers.clear()
        if self.txn is not None:  # a load that did not finish: nothing of it is kept
            self.txn.abort()
            self.txn = None
        try:
            if self.no_sync and self.dirty:
                self.env.sync(True)
        finally:
            self.env.close()

    def settings(self) -> dict[str, str]:
        if self.read_only:
            sync = "read-only environment (readonly=True)"
        elif self.no_sync:
            sync = "sync=False, metasync=False (MDB_NOSYNC; env.sync(True) at close after writes)"
        else:
            sync = "fsync at commit (durable commits)"
        return {
            "sync": sync,
            "map_size": str(self.map_size),
            "readahead": "on" if self.readahead else "off (MDB_NORDAHEAD)",
            "write_map": "on (MDB_WRITEMAP)" if self.write_map else "off",
            "max_readers": str(MAX_READERS),
            "write_batch": ("one write transaction for the whole first load, committed at its end"
                            if self.one_txn else "one write transaction per batch (env.begin(write=True))"),
            "reader": "one read transaction per reader (Transaction.get), renewed on refresh",
            "binding": version(),
        }


def put_all(txn, batch: list[tuple[bytes, Optional[bytes]]]) -> None:
    put, delete = txn.put, txn.delete
    for k, v in batch:
        if v is None:
            delete(k)
        else:
            put(k, v)


class LmdbReader(Reader):
    def __init__(self, env):
        self.env = env
        self.txn = env.begin()
        self.get = self.txn.get

    def refresh(self) -> None:
        self.txn.abort()
        self.txn = self.env.begin()
        self.get = self.txn.get

    def scan(self, start: Optional[bytes], limit: int) -> Iterator[tuple[bytes, bytes]]:
        cur = self.txn.cursor()
        positioned = cur.set_range(start) if start is not None else cur.first()
        if not positioned or limit <= 0:
            return iter(())
        return islice(cur.iternext(keys=True, values=True), limit)

    def close(self) -> None:
        if self.txn is not None:
            self.txn.abort()
            self.txn = None


DESCRIPTOR = Descriptor(
    name="py-lmdb",
    description="LMDB from Python (py-lmdb, the `lmdb` package): B+tree in a memory map",
    capabilities=("scan", "batch", "read-only", "persistent", "delete"),
    options=(
        OptionSpec("map_size", "int", "", "memory map size in bytes (default: max(1 GiB, 4 x the plan's bytes))"),
        OptionSpec("no_readahead", "bool", "false",
                   "readahead=False (MDB_NORDAHEAD): no OS read-ahead (random reads larger than RAM)"),
        OptionSpec("write_map", "bool", "false", "writemap=True (MDB_WRITEMAP): write through a writable map"),
        OptionSpec("transaction", "enum", "batch",
                   "batch: one write transaction per write batch; load: a load into an empty environment is "
                   "one write transaction, committed inside the load's timing (article 000's way)",
                   ("batch", "load")),
    ),
    version=version,
    unavailable=lambda: _missing,
    open=LmdbEngine,
)
