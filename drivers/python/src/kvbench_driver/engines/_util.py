"""Helpers shared by the engine modules."""

from __future__ import annotations

import functools
import importlib
import importlib.metadata
from types import ModuleType
from typing import Optional


def try_import(module: str) -> tuple[Optional[ModuleType], Optional[str]]:
    """(module, None) or (None, why it cannot be imported)."""
    try:
        return importlib.import_module(module), None
    except Exception as e:  # noqa: BLE001 - an ImportError, or a broken shared library
        return None, f"python package `{module}` cannot be imported ({type(e).__name__}: {e}); " \
                     "run drivers/python/setup.sh"


@functools.cache
def dist_version(dist: str) -> str:
    # Cached: the lookup scans every installed package's metadata (about half a millisecond),
    # and an adapter that names its binding in its settings would pay it inside each timed open.
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"
