"""Reader of the kvbench plan file (docs/plan-format.md), memory-mapped with the mmap module.

A plan holds the records and every phase's operations, little-endian:
a 64-byte header, a table of 32-byte section entries, and the sections from offset 4096.
Nothing here copies the file: keys and values are sliced out of the map when asked for.
"""

from __future__ import annotations

import mmap
import os
import struct
import sys
from array import array
from typing import NamedTuple, Optional

MAGIC = b"KVBPLAN\0"
FORMAT_VERSION = 1
HEADER_SIZE = 64
SECTION_ENTRY_SIZE = 32
MAX_SECTIONS = 126
FIRST_SECTION = 4096
NONE = 0xFFFFFFFF

# Section kinds.
DATA = 1
INDEX = 2
SORTED = 3
UPDATE_DATA = 4
UPDATE_INDEX = 5
OPS = 6
SCAN_EXPECT = 7
SPEC = 8
SECTION_NAMES = {
    DATA: "DATA",
    INDEX: "INDEX",
    SORTED: "SORTED",
    UPDATE_DATA: "UPDATE_DATA",
    UPDATE_INDEX: "UPDATE_INDEX",
    OPS: "OPS",
    SCAN_EXPECT: "SCAN_EXPECT",
    SPEC: "SPEC",
}

# Operation kinds.
PUT = 1
GET = 2
DELETE = 3
SCAN = 4

_HEADER = struct.Struct("<8sIIQQQQQQ")
_ENTRY = struct.Struct("<IIQQQ")
_LITTLE = sys.byteorder == "little"


class PlanError(Exception):
    pass


class Section(NamedTuple):
    kind: int
    index: int
    offset: int
    length: int
    count: int


class Plan:
    """A memory-mapped plan. Accessors assume a plan that passed the checks in __init__."""

    def __init__(self, path: str):
        self.path = str(path)

        def bad(why: str) -> PlanError:
            return PlanError(f"plan {self.path}: {why}; delete it and run again to rebuild")

        try:
            with open(self.path, "rb") as f:
                size = os.fstat(f.fileno()).st_size
                if size < FIRST_SECTION:
                    raise bad("not a kvbench plan (bad magic)")
                self._map = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        except OSError as e:
            raise PlanError(f"opening plan {self.path}: {e.strerror or e}") from e
        m = self._map
        (magic, version, nsec, self.seed, self.spec_hash, self.records, self.unique_records,
         self.raw_bytes, self.update_values) = _HEADER.unpack_from(m, 0)
        if magic != MAGIC:
            self._map.close()
            raise bad("not a kvbench plan (bad magic)")
        if version != FORMAT_VERSION:
            self._map.close()
            raise bad(f"format version {version}, this kvbench reads {FORMAT_VERSION}")
        if nsec > MAX_SECTIONS:
            self._map.close()
            raise bad(f"{nsec} sections; at most {MAX_SECTIONS}")
        self.sections: list[Section] = []
        for i in range(nsec):
            e = Section(*_ENTRY.unpack_from(m, HEADER_SIZE + SECTION_ENTRY_SIZE * i))
            if e.offset + e.length > size:
                self._map.close()
                raise bad("a section runs past the end of the file (truncated?)")
            self.sections.append(e)
        self._bytes = memoryview(m)
        self._views: list[memoryview] = [self._bytes]

        def first(kind: int) -> Section:
            for e in self.sections:
                if e.kind == kind:
                    return e
            self.close()
            raise bad(f"no {SECTION_NAMES[kind]} section")

        index, uindex, sorted_ = first(INDEX), first(UPDATE_INDEX), first(SORTED)
        # INDEX and UPDATE_INDEX entries are (u64 offset, u32, u32): read as four u32 each.
        self._index = self._u32(index.offset, self.records * 16)
        self._uindex = self._u32(uindex.offset, self.update_values * 16)
        self._sorted = self._u32(sorted_.offset, self.unique_records * 4)

    # -- raw access --

    def _u32(self, offset: int, length: int):
        """u32 little-endian values of a byte range: a zero-copy view on little-endian hosts."""
        view = self._bytes[offset:offset + length]
        if _LITTLE:
            v = view.cast("I")
            self._views.append(view)
            self._views.append(v)
            return v
        a = array("I", view.tobytes())
        a.byteswap()
        view.release()
        return a

    def section(self, kind: int, index: int = 0) -> Optional[Section]:
        for e in self.sections:
            if e.kind == kind and e.index == index:
                return e
        return None

    def bytes_at(self, offset: int, length: int) -> bytes:
        return self._map[offset:offset + length]

    # -- records --

    def key(self, r: int) -> bytes:
        """Key of record `r` (a copy, as a binding needs bytes)."""
        ix = self._index
        i = 4 * r
        off = ix[i] | (ix[i + 1] << 32)
        return self._map[off:off + ix[i + 2]]

    def _value_range(self, j: int) -> tuple[int, int]:
        if j < self.records:
            ix = self._index
            i = 4 * j
            off = (ix[i] | (ix[i + 1] << 32)) + ix[i + 2]
            return off, ix[i + 3]
        ux = self._uindex
        i = 4 * (j - self.records)
        return ux[i] | (ux[i + 1] << 32), ux[i + 3]

    def value(self, j: int) -> bytes:
        """Value index `j`: below `records` the load value of record j, above an update value."""
        off, n = self._value_range(j)
        return self._map[off:off + n]

    def value_view(self, j: int) -> memoryview:
        """The same bytes as value(j) without a copy (for comparisons)."""
        off, n = self._value_range(j)
        return self._bytes[off:off + n]

    def update_record(self, u: int) -> int:
        """Record number whose update the u-th update value is."""
        return self._uindex[4 * u + 2]

    def sorted(self, p: int) -> int:
        """Record number of the key at sorted position `p`."""
        return self._sorted[p]

    # -- phases --

    def phase_count(self) -> int:
        return sum(1 for e in self.sections if e.kind == OPS)

    def ops(self, phase: int):
        """The phase's operations as a flat sequence of u32: op i is items 4i..4i+3
        (kind, key, value, aux); None when the plan has no such phase."""
        e = self.section(OPS, phase)
        if e is None:
            return None
        return self._u32(e.offset, e.length - e.length % 16)

    def scan_expect(self, phase: int):
        """Value index expected at each sorted position when scan phase `phase` starts."""
        e = self.section(SCAN_EXPECT, phase)
        if e is None:
            return None
        return self._u32(e.offset, e.length - e.length % 4)

    def spec_json(self) -> Optional[bytes]:
        e = self.section(SPEC, 0)
        return None if e is None else self.bytes_at(e.offset, e.length)

    def close(self) -> None:
        for v in reversed(self._views):
            v.release()
        self._views.clear()
        self._map.close()

    def __enter__(self) -> Plan:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
