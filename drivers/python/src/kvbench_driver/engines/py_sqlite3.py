"""`py-sqlite3`: SQLite through Python's standard library `sqlite3`, used as a key-value store.

One table `kv(k BLOB PRIMARY KEY, v BLOB NOT NULL) WITHOUT ROWID` in `kv.sqlite`, as the Rust
`sqlite` engine: with the key as the primary key, a rowid table would keep the keys twice (the
table and its key index) and read two B-trees per get. Writes go through one connection (a lock
serialises threads), one `BEGIN IMMEDIATE` ... `COMMIT` per batch with `executemany`. Every reader
opens its own read-only connection (in WAL mode readers never wait for the writer); a get is one
`SELECT` on it.
"""

from __future__ import annotations

import sqlite3
import threading
from typing import Iterator, Optional

from ..engine import Descriptor, Engine, OpenArgs, OptionError, OptionSpec, Reader, Unsupported

FILE = "kv.sqlite"
BUSY_TIMEOUT_S = 10.0
SYNC = {
    "none": ("OFF", "synchronous=OFF (no fsync while running)"),
    "commit": ("FULL", "synchronous=FULL (fsync at every commit)"),
    "always": ("FULL", "synchronous=FULL (fsync at every commit; a batch is one transaction)"),
}


def version() -> str:
    return f"sqlite3 (Python standard library), SQLite {sqlite3.sqlite_version}"


def cache_kib(args: OpenArgs) -> Optional[int]:
    n = args.options.int("cache_size")
    if n is not None and n <= 0:
        raise OptionError(f"sqlite cache_size must be positive bytes, got {n}")
    return None if n is None else -(-n // 1024)


def connect(path: str, read_only: bool, kib: Optional[int]) -> sqlite3.Connection:
    uri = f"file:{path}?mode=ro" if read_only else f"file:{path}?mode=rwc"
    # isolation_level=None: the adapter writes BEGIN/COMMIT itself, one transaction per batch.
    c = sqlite3.connect(uri, uri=True, timeout=BUSY_TIMEOUT_S, isolation_level=None,
                        check_same_thread=False)
    if kib is not None:
        c.execute(f"PRAGMA cache_size=-{kib}")
    return c


class Sqlite3Engine(Engine):
    def __init__(self, args: OpenArgs):
        if args.mode == "secondary":
            raise Unsupported("secondary open (SQLite has no secondary instances)")
        self.path = args.file(FILE)
        self.kib = cache_kib(args)
        self.lock = threading.Lock()
        self.writer: Optional[sqlite3.Connection] = None
        s = {"table": "kv(k BLOB PRIMARY KEY, v BLOB NOT NULL) WITHOUT ROWID",
             "cache_size": "library default (2000 KiB)" if self.kib is None else f"{self.kib} KiB per connection",
             "binding": version()}
        if args.mode == "read-write":
            self.writer = self.open_writer(args, s)
        else:
            probe = connect(self.path, True, self.kib)
            s["journal_mode"] = probe.execute("PRAGMA journal_mode").fetchone()[0].lower()
            probe.close()
            s["sync"] = "read-only connections (mode=ro)"
        s["write_batch"] = "one BEGIN IMMEDIATE ... COMMIT per batch (executemany)"
        s["reader"] = "one read-only connection per reader; a get is one SELECT"
        self._settings = s

    def open_writer(self, args: OpenArgs, s: dict) -> sqlite3.Connection:
        c = connect(self.path, False, self.kib)
        want = args.options.text("journal_mode") or "wal"
        got = c.execute(f"PRAGMA journal_mode={want}").fetchone()[0].lower()
        if got != want:
            raise OptionError(f"sqlite asked journal_mode={want}, got {got}")
        level, text = SYNC[args.sync]
        c.execute(f"PRAGMA synchronous={level}")
        c.execute("CREATE TABLE IF NOT EXISTS kv(k BLOB PRIMARY KEY, v BLOB NOT NULL) WITHOUT ROWID")
        s["journal_mode"], s["sync"] = got, text
        return c

    def write(self, batch: list[tuple[bytes, Optional[bytes]]]) -> None:
        if self.writer is None:
            raise Unsupported("writes on a read-only open")
        puts = [(k, v) for k, v in batch if v is not None]
        deletes = [(k,) for k, v in batch if v is None]
        with self.lock:
            c = self.writer
            c.execute("BEGIN IMMEDIATE")
            try:
                if puts:
                    c.executemany("INSERT OR REPLACE INTO kv(k, v) VALUES (?, ?)", puts)
                if deletes:
                    c.executemany("DELETE FROM kv WHERE k = ?", deletes)
                c.execute("COMMIT")
            except BaseException:
                c.execute("ROLLBACK")
                raise

    def reader(self) -> Reader:
        return Sqlite3Reader(connect(self.path, True, self.kib))

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
            self.writer = None

    def settings(self) -> dict[str, str]:
        return dict(self._settings)


class Sqlite3Reader(Reader):
    def __init__(self, conn: sqlite3.Connection):
        self.conn = conn
        execute = conn.execute

        def get(key: bytes) -> Optional[bytes]:
            row = execute("SELECT v FROM kv WHERE k = ?", (key,)).fetchone()
            return None if row is None else row[0]

        self.get = get

    def scan(self, start: Optional[bytes], limit: int) -> Iterator[tuple[bytes, bytes]]:
        if limit <= 0:
            return iter(())
        limit = min(limit, (1 << 63) - 1)
        if start is None:
            return self.conn.execute("SELECT k, v FROM kv ORDER BY k LIMIT ?", (limit,))
        return self.conn.execute("SELECT k, v FROM kv WHERE k >= ? ORDER BY k LIMIT ?", (start, limit))

    def close(self) -> None:
        self.conn.close()


DESCRIPTOR = Descriptor(
    name="py-sqlite3",
    description="SQLite from Python (standard library sqlite3): one WITHOUT ROWID table as a key-value store",
    capabilities=("scan", "batch", "read-only", "persistent", "delete"),
    options=(
        OptionSpec("journal_mode", "enum", "wal", "PRAGMA journal_mode (WAL lets readers run beside the writer)",
                   ("wal", "delete")),
        OptionSpec("cache_size", "int", "",
                   "page cache per connection in bytes (PRAGMA cache_size=-KiB; default: the library's 2000 KiB)"),
    ),
    version=version,
    unavailable=lambda: None,
    open=Sqlite3Engine,
)
