"""`py-plyvel`: LevelDB through plyvel (its wheel bundles LevelDB).

One database in the job directory. Each write batch is one `write_batch(sync=...)`; `sync`
maps to LevelDB's WriteOptions.sync. Reads go straight to the database (they see the latest
writes). LevelDB has neither read-only nor secondary opens.
"""

from __future__ import annotations

from itertools import islice
from typing import Iterator, Optional

from ..engine import Descriptor, Engine, OpenArgs, OptionError, OptionSpec, Reader, Unsupported
from ._util import dist_version, try_import

plyvel, _missing = try_import("plyvel")


def version() -> str:
    if plyvel is None:
        return "not installed"
    return f"plyvel {dist_version('plyvel')} (LevelDB {plyvel.__leveldb_version__})"


class PlyvelEngine(Engine):
    def __init__(self, args: OpenArgs):
        o = args.options
        if args.mode != "read-write":
            raise Unsupported(f"{args.mode} open (LevelDB has no {args.mode} mode)")
        s: dict[str, str] = {}
        kw = {}
        compression = o.text("compression") or "snappy"
        if compression not in ("none", "snappy"):
            raise OptionError(f"leveldb compression `{compression}`")
        kw["compression"] = None if compression == "none" else "snappy"
        s["compression"] = compression
        cache = o.int("block_cache")
        if cache is None:
            s["block_cache"] = "library default (8 MiB LRU)"
        elif cache > 0:
            kw["lru_cache_size"] = cache
            s["block_cache"] = f"{cache} bytes LRU"
        else:
            raise OptionError(f"leveldb block_cache must be positive, got {cache}")
        bloom = o.int("bloom_bits") or 0
        if bloom < 0:
            raise OptionError(f"leveldb bloom_bits must be >= 0, got {bloom}")
        kw["bloom_filter_bits"] = bloom
        s["bloom_filter"] = f"{bloom} bits/key" if bloom else "off"
        self.db = plyvel.DB(args.dir, create_if_missing=True, **kw)
        self.sync = args.sync != "none"
        s["sync"] = ("WriteOptions.sync=false (log not fsynced)" if not self.sync
                     else "WriteOptions.sync=true (log fsync per write batch)")
        s["write_batch"] = "one DB.write_batch() per batch"
        s["binding"] = version()
        self._settings = s

    def write(self, batch: list[tuple[bytes, Optional[bytes]]]) -> None:
        with self.db.write_batch(sync=self.sync) as wb:
            for k, v in batch:
                if v is None:
                    wb.delete(k)
                else:
                    wb.put(k, v)

    def reader(self) -> Reader:
        return PlyvelReader(self.db)

    def close(self) -> None:
        self.db.close()

    def settings(self) -> dict[str, str]:
        return dict(self._settings)


class PlyvelReader(Reader):
    def __init__(self, db):
        self.db = db
        self.get = db.get

    def scan(self, start: Optional[bytes], limit: int) -> Iterator[tuple[bytes, bytes]]:
        it = self.db.iterator(start=start) if start is not None else self.db.iterator()
        return islice(it, limit)


DESCRIPTOR = Descriptor(
    name="py-plyvel",
    description="LevelDB from Python (plyvel, bundled LevelDB): LSM tree",
    capabilities=("scan", "batch", "persistent", "delete"),
    options=(
        OptionSpec("compression", "enum", "snappy", "block compression of table files", ("none", "snappy")),
        OptionSpec("block_cache", "int", "", "LRU block cache capacity in bytes (default: the library's 8 MiB)"),
        OptionSpec("bloom_bits", "int", "0", "bloom filter bits per key (0 = no filter)"),
    ),
    version=version,
    unavailable=lambda: _missing,
    open=PlyvelEngine,
)
