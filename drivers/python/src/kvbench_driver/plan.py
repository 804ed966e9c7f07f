"""Reader of the plan file (docs/plan-format.md, "The plan file"): stored records, their canonical
records and the key order, memory-mapped and read in place."""

from __future__ import annotations

import mmap
import struct

import numpy as np
import xxhash

MAGIC = b"KVBPLAN\0"
VERSION = 2
DATA, INDEX, SORTED, CANON = 1, 2, 3, 4
ENTRY = struct.Struct("<IIQQQ")
INDEX_DTYPE = np.dtype([("off", "<u8"), ("klen", "<u4"), ("vlen", "<u4")])
SIZES = {INDEX: 16, SORTED: 4, CANON: 4}


class PlanError(Exception):
    pass


class Plan:
    def __init__(self, path: str):
        self.path = str(path)
        try:
            with open(self.path, "rb") as f:
                self.mm = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        except (OSError, ValueError) as e:
            raise PlanError(f"plan {self.path}: cannot open: {e}") from e
        mm = self.mm
        if len(mm) < 64 or mm[:8] != MAGIC:
            raise PlanError(f"plan {self.path}: not a kvbench plan (bad magic)")
        version, count = struct.unpack_from("<II", mm, 8)
        if version != VERSION or count > 126 or 64 + 32 * count > len(mm):
            raise PlanError(f"plan {self.path}: format {version} with {count} sections; this worker reads format 2")
        self.records, self.distinct = struct.unpack_from("<QQ", mm, 32)
        self.sections, h = {}, xxhash.xxh3_64(mm[:56])
        h.update(mm[64:64 + 32 * count])
        for i in range(count):
            kind, _, off, length, n = ENTRY.unpack_from(mm, 64 + 32 * i)
            if off % 8 or off + length > len(mm) or (kind in SIZES and length != SIZES[kind] * n):
                raise PlanError(f"plan {self.path}: section {i} (kind {kind}) is outside the file, unaligned or "
                                "mis-sized")
            h.update(mm[off:off + length])
            self.sections[kind] = (off, length, n)
        if h.intdigest() != struct.unpack_from("<Q", mm, 56)[0]:
            raise PlanError(f"plan {self.path}: checksum mismatch")
        self.index = self._array(INDEX, INDEX_DTYPE)
        self.sorted = self._array(SORTED, np.dtype("<u4"))
        self.canon = self._array(CANON, np.dtype("<u4"))
        for arr, want, name in ((self.index, self.records, "INDEX"), (self.canon, self.records, "CANON"),
                                (self.sorted, self.distinct, "SORTED")):
            if arr is not None and len(arr) != want:
                raise PlanError(f"plan {self.path}: {name} has {len(arr)} entries, expected {want}")
        if self.index is not None and len(self.index):
            data_off, data_len, _ = self.sections.get(DATA, (0, 0, 0))
            ends = self.index["off"] + self.index["klen"] + self.index["vlen"]
            if int(self.index["off"].min()) < data_off or int(ends.max()) > data_off + data_len:
                raise PlanError(f"plan {self.path}: an INDEX entry lies outside DATA")

    def _array(self, kind: int, dtype: np.dtype):
        if kind not in self.sections:
            return None
        off, _, n = self.sections[kind]
        return np.frombuffer(self.mm, dtype, n, off)

    def _need_index(self):
        if self.index is None:
            raise PlanError(f"plan {self.path}: no INDEX section for stored records")
        return self.index

    def keys(self, r: np.ndarray) -> list[bytes]:
        ix, mm = self._need_index()[r.astype(np.intp)], self.mm
        return [mm[o:o + n] for o, n in zip(ix["off"].tolist(), ix["klen"].tolist())]

    def values(self, r: np.ndarray) -> list[bytes]:
        ix, mm = self._need_index()[r.astype(np.intp)], self.mm
        return [mm[o + k:o + k + n] for o, k, n in zip(ix["off"].tolist(), ix["klen"].tolist(), ix["vlen"].tolist())]

    def value_lengths(self, r=None) -> np.ndarray:
        ix = self._need_index()
        return (ix["vlen"] if r is None else ix["vlen"][r.astype(np.intp)]).astype(np.uint64)
