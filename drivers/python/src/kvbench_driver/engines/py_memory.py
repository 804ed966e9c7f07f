"""`py-memory`: a dict in the worker process. The Python reference engine: the tests run the
whole worker on it without any binding. Not persistent (nothing survives close).

`corrupt_every = N` makes every N-th get (counted over the engine's readers) return a wrong value
(the right one with a byte appended, or a value for an absent key), so tests can prove that the
worker counts mismatches exactly."""

from __future__ import annotations

import threading
from bisect import bisect_left
from itertools import count, islice
from typing import Iterator, Optional

from .. import __version__
from ..engine import Descriptor, Engine, OpenArgs, OptionError, OptionSpec, Reader


class MemoryEngine(Engine):
    def __init__(self, args: OpenArgs):
        self.map: dict[bytes, bytes] = {}
        self._sorted: Optional[list[bytes]] = None
        self.corrupt_every = args.options.int("corrupt_every") or 0
        if self.corrupt_every < 0:
            raise OptionError(f"py-memory corrupt_every must be >= 0, got {self.corrupt_every}")
        self.gets = count(1)
        # Writes and scans exclude each other: a scan of the sorted keys must not see a write
        # of another thread half done (gets are single dict lookups, atomic under the GIL).
        self.lock = threading.Lock()

    def write(self, batch: list[tuple[bytes, Optional[bytes]]]) -> None:
        m = self.map
        with self.lock:
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
        s = {"store": "python dict; ordered scans sort the keys when they changed; writes and scans take one lock"}
        if self.corrupt_every:
            s["corrupt_every"] = f"every {self.corrupt_every}th get returns a wrong value (a test engine)"
        return s


class MemoryReader(Reader):
    def __init__(self, engine: MemoryEngine):
        self.engine = engine
        self.get = engine.map.get if not engine.corrupt_every else self.corrupt_get

    def corrupt_get(self, key: bytes) -> Optional[bytes]:
        v = self.engine.map.get(key)
        if next(self.engine.gets) % self.engine.corrupt_every:
            return v
        return (v or b"") + b"!"

    def scan(self, start: Optional[bytes], limit: int) -> Iterator[tuple[bytes, bytes]]:
        with self.engine.lock:
            keys = self.engine.sorted_keys()
            m = self.engine.map
            i = 0 if start is None else bisect_left(keys, start)
            return iter([(k, m[k]) for k in islice(keys, i, i + limit)])


DESCRIPTOR = Descriptor(
    name="py-memory",
    description="python dict in the worker (reference oracle for tests; not a real store)",
    capabilities=("scan", "batch", "delete"),
    options=(OptionSpec("corrupt_every", "int", "0",
                        "every N-th get returns a wrong value (0: never); for the worker's own tests"),),
    version=lambda: f"kvbench_driver {__version__}",
    unavailable=lambda: None,
    open=MemoryEngine,
)
