"""`py-memory`: a dict in the worker process. The Python reference engine: the tests run the
whole worker on it without any binding. Not persistent (nothing survives close)."""

from __future__ import annotations

from bisect import bisect_left
from itertools import islice
from typing import Iterator, Optional

from .. import __version__
from ..engine import Capabilities, Descriptor, Engine, OpenArgs, Reader


class MemoryEngine(Engine):
    def __init__(self, args: OpenArgs):
        self.map: dict[bytes, bytes] = {}
        self._sorted: Optional[list[bytes]] = None

    def write(self, batch: list[tuple[bytes, Optional[bytes]]]) -> None:
        m = self.map
        for k, v in batch:
            if v is None:
                m.pop(k, None)
            else:
                m[k] = v
        self._sorted = None

    def sorted_keys(self) -> list[bytes]:
        if self._sorted is None:
            self._sorted = sorted(self.map)
        return self._sorted

    def reader(self) -> Reader:
        return MemoryReader(self)

    def settings(self) -> dict[str, str]:
        return {"store": "python dict; ordered scans sort the keys when they changed"}


class MemoryReader(Reader):
    def __init__(self, engine: MemoryEngine):
        self.engine = engine
        self.get = engine.map.get

    def scan(self, start: Optional[bytes], limit: int) -> Iterator[tuple[bytes, bytes]]:
        keys = self.engine.sorted_keys()
        m = self.engine.map
        i = 0 if start is None else bisect_left(keys, start)
        return ((k, m[k]) for k in islice(keys, i, i + limit))


DESCRIPTOR = Descriptor(
    name="py-memory",
    description="python dict in the worker (reference oracle for tests; not a real store)",
    capabilities=Capabilities(ordered_scan=True, batch=True, delete=True),
    options=(),
    version=lambda: f"kvbench_driver {__version__}",
    unavailable=lambda: None,
    open=MemoryEngine,
)
