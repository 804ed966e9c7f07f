"""The RocksDB family from Python: rocksdict (RocksDB) and speedict (Speedb) share one API, so
`py-rocksdict` and `py-speedict` share this adapter.

One database in the job directory, default column family. `raw = false` is the binding's default
mode, where keys and values are stored with a type-tag byte before them (what article 000's first
rows measured); `raw = true` stores the bytes as given. Each write batch is one WriteBatch;
`sync` maps to WriteOptions.sync. Multi-get is the binding's list get (RocksDB MultiGet).
Opens read-write, read-only, or as a secondary instance (its own directory `secondary/` inside
the job directory, caught up with the primary at open) where the binding supports it.
"""

from __future__ import annotations

from typing import Iterator, Optional

from ..engine import Descriptor, Engine, OpenArgs, OptionError, OptionSpec, Reader, Unsupported
from ._util import dist_version, try_import

COMPRESSIONS = ("none", "snappy", "lz4", "zstd")

OPTIONS = (
    OptionSpec("raw", "bool", "false",
               "raw mode: store keys and values as given (off: the binding's typed encoding, a tag byte "
               "before every key and value)"),
    OptionSpec("keys", "enum", "bytes",
               "int: keys as Python int and values as str in the typed mode (article 000's `db[i] = data`); "
               "bytes: the plan's bytes", ("bytes", "int")),
    OptionSpec("compression", "enum", "snappy", "block compression of SST files", COMPRESSIONS),
    OptionSpec("block_cache", "int", "", "LRU block cache capacity in bytes (default: the library's own block cache)"),
    OptionSpec("bloom_bits", "int", "0", "bloom filter bits per key (0 = no filter)"),
    OptionSpec("write_buffer", "int", "", "memtable size in bytes (default: the library's, 64 MiB)"),
)


class RocksEngine(Engine):
    def __init__(self, mod, dist: str, args: OpenArgs, no_secondary: Optional[str]):
        o = args.options
        self.mode = args.mode
        self.sync = args.sync
        if args.mode == "secondary" and no_secondary:
            raise Unsupported(f"secondary open ({no_secondary})")
        s: dict[str, str] = {}
        self.raw = o.bool("raw")
        opts = mod.Options(raw_mode=self.raw)
        opts.create_if_missing(args.mode == "read-write")
        s["raw_mode"] = ("on (bytes stored as given)" if self.raw
                         else "off (typed encoding: a tag byte before each key and value)")
        self.typed = o.text("keys") == "int"
        if self.typed and self.raw:
            raise OptionError(f"{dist} keys = int needs the typed mode: it cannot be combined with raw = true")
        s["keys"] = ("int: Python int keys (big-endian value of the plan's key) and str values, converted in "
                     "the timed call" if self.typed else "bytes: the plan's keys and values as bytes")

        compression = o.text("compression") or "snappy"
        if compression not in COMPRESSIONS:
            raise OptionError(f"{dist} compression `{compression}`")
        opts.set_compression_type(getattr(mod.DBCompressionType, compression)())
        s["compression"] = compression

        table = mod.BlockBasedOptions()
        cache = o.int("block_cache")
        if cache is None:
            s["block_cache"] = "library default"
        elif cache > 0:
            table.set_block_cache(mod.Cache(cache))
            s["block_cache"] = f"{cache} bytes LRU"
        elif cache == 0:
            table.disable_cache()
            s["block_cache"] = "disabled"
        else:
            raise OptionError(f"{dist} block_cache must be >= 0, got {cache}")
        bloom = o.int("bloom_bits") or 0
        if bloom < 0:
            raise OptionError(f"{dist} bloom_bits must be >= 0, got {bloom}")
        if bloom:
            table.set_bloom_filter(bloom, False)
            s["bloom_filter"] = f"{bloom} bits/key (full filter)"
        else:
            s["bloom_filter"] = "off"
        opts.set_block_based_table_factory(table)
        wb = o.int("write_buffer")
        if wb is None:
            s["write_buffer"] = "library default (64 MiB)"
        elif wb > 0:
            opts.set_write_buffer_size(wb)
            s["write_buffer"] = f"{wb} bytes"
        else:
            raise OptionError(f"{dist} write_buffer must be positive, got {wb}")

        if args.mode == "read-write":
            access = mod.AccessType.read_write()
            s["open_mode"] = "read-write"
        elif args.mode == "read-only":
            access = mod.AccessType.read_only()
            s["open_mode"] = "read-only (AccessType.read_only())"
        else:
            secondary = args.file("secondary")
            # A secondary instance must keep every table file open (RocksDB requires -1).
            opts.set_max_open_files(-1)
            access = mod.AccessType.secondary(secondary)
            s["open_mode"] = "secondary (AccessType.secondary, caught up at open)"
        self.db = mod.Rdict(args.dir, options=opts, access_type=access)
        if args.mode == "secondary":
            self.db.try_catch_up_with_primary()

        self.write_opts = mod.WriteOptions()
        self.write_opts.sync = args.sync != "none"
        s["sync"] = ("WriteOptions.sync=false (WAL fsynced at close after writes)" if args.sync == "none"
                     else "WriteOptions.sync=true (WAL fsync per write batch)")
        s["write_batch"] = "one WriteBatch per batch"
        s["multi_get"] = "Rdict.get(list of keys) (RocksDB MultiGet)"
        s["binding"] = f"{dist} {dist_version(dist)}"
        self._settings = s
        self._mod = mod
        self.readers: list[RocksReader] = []
        # Written since open: only then does a no-sync database need its WAL synced at close.
        self.dirty = False

    def write(self, batch: list[tuple[bytes, Optional[bytes]]]) -> None:
        if self.mode != "read-write":
            raise RuntimeError(f"opened {self.mode}, cannot write")
        self.dirty = True
        wb = self._mod.WriteBatch(raw_mode=self.raw)
        for k, v in batch:
            if self.typed:
                k, v = typed_key(k), typed_value(v)
            if v is None:
                wb.delete(k)
            else:
                wb.put(k, v)
        self.db.write(wb, self.write_opts)

    def reader(self) -> Reader:
        r = TypedRocksReader(self.db) if self.typed else RocksReader(self.db)
        self.readers.append(r)
        return r

    def close(self) -> None:
        for r in self.readers:
            r.close()
        self.readers.clear()
        try:
            if self.mode == "read-write" and self.sync == "none" and self.dirty:
                # Without per-write sync the WAL sits in the page cache; make it durable now.
                self.db.flush_wal(True)
        finally:
            self.db.close()

    def settings(self) -> dict[str, str]:
        return dict(self._settings)


class RocksReader(Reader):
    """Reads go straight to the database and always see the latest writes."""

    def __init__(self, db):
        self.db = db
        self.get = db.get
        self._iters: list = []

    def multi_get(self, keys: list[bytes]) -> list[Optional[bytes]]:
        return self.db.get(keys)

    def scan(self, start: Optional[bytes], limit: int) -> Iterator[tuple[bytes, bytes]]:
        it = self.db.iter()
        self._iters.append(it)
        if start is None:
            it.seek_to_first()
        else:
            it.seek(start)
        return self._walk(it, limit)

    def _walk(self, it, limit: int) -> Iterator[tuple[bytes, bytes]]:
        n = 0
        try:
            while n < limit and it.valid():
                yield it.key(), it.value()
                n += 1
                it.next()
        finally:
            if it in self._iters:
                self._iters.remove(it)
            del it

    def close(self) -> None:
        self._iters.clear()


def typed_key(k: bytes) -> int:
    if len(k) > 8:
        raise ValueError(f"keys = int takes keys of at most 8 bytes (a 64-bit number); this plan's are {len(k)}")
    return int.from_bytes(k, "big")


def typed_value(v: Optional[bytes]) -> Optional[str]:
    try:
        return None if v is None else v.decode("utf-8")
    except UnicodeDecodeError:
        raise ValueError("keys = int stores values as str: a value is not UTF-8 (use a text generator)") from None


class TypedRocksReader(RocksReader):
    """Reads of a `keys = int` database: an int key in, the str value encoded back to bytes."""

    def __init__(self, db):
        super().__init__(db)
        db_get = db.get

        def get(key: bytes) -> Optional[bytes]:
            v = db_get(typed_key(key))
            return None if v is None else v.encode()

        self.get = get

    def multi_get(self, keys: list[bytes]) -> list[Optional[bytes]]:
        return [None if v is None else v.encode() for v in self.db.get([typed_key(k) for k in keys])]

    def scan(self, start: Optional[bytes], limit: int) -> Iterator[tuple[bytes, bytes]]:
        raise Unsupported("ordered scan with keys = int (typed int keys do not sort as the plan's bytes)")


def descriptor(name: str, module: str, description: str, no_secondary: Optional[str] = None) -> Descriptor:
    mod, missing = try_import(module)

    def open_(args: OpenArgs) -> Engine:
        return RocksEngine(mod, module, args, no_secondary)

    return Descriptor(
        name=name,
        description=description,
        capabilities=("scan", "multi-get", "batch", "read-only") + (("secondary",) if no_secondary is None else ())
        + ("persistent", "delete"),
        options=OPTIONS,
        version=lambda: f"{module} {dist_version(module)}" if mod is not None else "not installed",
        unavailable=lambda: missing,
        open=open_,
    )
