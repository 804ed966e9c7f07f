"""`py-rocksdict`: RocksDB from Python through rocksdict (see _rocks.py for the adapter)."""

from ._rocks import descriptor

DESCRIPTOR = descriptor(
    "py-rocksdict",
    "rocksdict",
    "RocksDB from Python (rocksdict, bundled RocksDB): LSM tree",
)
