"""Every Python engine, one registry line each. A line names the engine and its module; the module
is imported only when the engine is looked up, and a binding that is not installed makes the
engine unavailable (with the reason), never the registry."""

from __future__ import annotations

import importlib
from typing import Optional

from ..engine import Descriptor

REGISTRY: list[tuple[str, str]] = [
    ("py-memory", "py_memory"),
    ("py-lmdb", "py_lmdb"),
    ("py-rocksdict", "py_rocksdict"),
    ("py-speedict", "py_speedict"),
    ("py-plyvel", "py_plyvel"),
    ("py-diskcache", "py_diskcache"),
    ("py-dbm", "py_dbm"),
    ("py-sqlite3", "py_sqlite3"),
]


def names() -> list[str]:
    return [name for name, _ in REGISTRY]


def find(name: str) -> Optional[Descriptor]:
    for n, module in REGISTRY:
        if n == name:
            return importlib.import_module(f"{__name__}.{module}").DESCRIPTOR
    return None


def all_descriptors() -> list[Descriptor]:
    return [find(n) for n in names()]
