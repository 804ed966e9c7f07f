"""`py-speedict`: Speedb (a RocksDB fork) from Python through speedict, rocksdict's twin (see
_rocks.py for the adapter). Secondary opens are declared unsupported: speedict 0.3.12 opens a
secondary instance and reads from it, but cannot close it (close() fails with "Not supported
operation in secondary mode"), so every open-per-operation read would fail."""

from ._rocks import descriptor

DESCRIPTOR = descriptor(
    "py-speedict",
    "speedict",
    "Speedb from Python (speedict, bundled Speedb): LSM tree, RocksDB-compatible",
    no_secondary="speedict cannot close a secondary instance: close() fails with "
                 "\"Not supported operation in secondary mode\"",
)
