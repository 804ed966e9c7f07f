"""The engine interface every Python store implements, mirroring crates/kvbench-model/src/engine.rs.

Adapters never time anything: the worker owns every clock read. An adapter translates one call
into the binding's API and lets the binding's exceptions propagate (the runner counts them), or
raises :class:`Unsupported` for something the engine cannot do at all (the phase is then N/A).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Optional

# Capability names, in the order of Capabilities::names() in Rust.
CAPABILITIES = ("scan", "multi-get", "batch", "read-only", "secondary", "persistent", "build-once", "delete")


class EngineError(Exception):
    """The store failed; str() is the message the result shows."""


class Unsupported(EngineError):
    """The engine cannot do this at all; the phase is reported N/A."""

    def __str__(self) -> str:
        return f"unsupported: {self.args[0]}"


class OptionError(EngineError):
    def __str__(self) -> str:
        return f"invalid option: {self.args[0]}"


def describe_error(e: BaseException) -> str:
    """One line for a result's reason: the binding's message, with its type when it says little."""
    if isinstance(e, EngineError):
        return str(e)
    return f"{type(e).__name__}: {str(e).strip() or repr(e)}"


@dataclass(frozen=True)
class OptionSpec:
    """One engine option, as `--list` declares it to kvbench (which checks and resolves a row's
    options against it)."""

    name: str
    kind: str  # "bool", "int", "enum" or "text"
    default: str
    doc: str
    choices: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        d = {"name": self.name, "kind": self.kind, "default": self.default, "doc": self.doc}
        return d | ({"choices": list(self.choices)} if self.kind == "enum" else {})


class Options:
    """A job's options as kvbench resolved them (docs/protocol.md): every option of the engine,
    None where unset, sizes as integers. kvbench checked them; engines only read them."""

    def __init__(self, values: dict[str, Any]):
        for k, v in sorted(values.items()):
            if not (v is None or isinstance(v, (bool, int, str))):
                raise ValueError(f"job option `{k}` = {json.dumps(v)}: kvbench writes null, true/false, integers "
                                 "or strings")
        self.values = dict(values)

    def bool(self, name: str) -> bool:
        return self.values.get(name) is True

    def int(self, name: str) -> Optional[int]:
        """An integer option; None when unset (the engine's own default applies)."""
        v = self.values.get(name)
        return v if isinstance(v, int) and not isinstance(v, bool) else None

    def text(self, name: str) -> Optional[str]:
        """An enum or text option (other kinds as JSON text); None when unset."""
        v = self.values.get(name)
        return v if v is None or isinstance(v, str) else json.dumps(v)

    def effective(self) -> dict[str, Any]:
        """The options that are set, for hello."""
        return {k: v for k, v in sorted(self.values.items()) if v is not None}


@dataclass
class OpenArgs:
    """Everything an engine needs to open its database (OpenArgs in Rust)."""

    dir: str
    options: Options
    sync: str = "commit"
    mode: str = "read-write"
    expected_records: int = 0
    expected_bytes: int = 0
    url: Optional[str] = None
    token: Optional[str] = None

    def file(self, name: str) -> str:
        return os.path.join(self.dir, name)


class Reader:
    """Reads of one thread. Subclasses usually bind `get` to the binding's own method in
    __init__ (an instance attribute), so the timed call is exactly what a Python user calls."""

    def get(self, key: bytes) -> Optional[bytes]:
        raise NotImplementedError

    def refresh(self) -> None:
        """Called after writes in a mixed phase: a reader holding a snapshot takes a new one."""

    def multi_get(self, keys: list[bytes]) -> list[Optional[bytes]]:
        """Values of `keys` in order; engines with a native call override it."""
        return [self.get(k) for k in keys]

    def scan(self, start: Optional[bytes], limit: int) -> Iterator[tuple[bytes, bytes]]:
        """Up to `limit` records in key order from the first key >= start (or the first key)."""
        raise Unsupported("ordered scan")

    def close(self) -> None:
        """Release the reader's transaction or snapshot."""


class Engine:
    def write(self, batch: list[tuple[bytes, Optional[bytes]]]) -> None:
        """Apply the writes (value None deletes) as one batch or transaction where the engine
        has them. Deleting an absent key is not an error."""
        raise NotImplementedError

    def reader(self) -> Reader:
        raise NotImplementedError

    def prepare(self) -> None:
        """Work that is not opening the engine (the `prepare` step, untimed in reports)."""

    def finish_load(self) -> None:
        """Called once after the load phase, inside its timing."""

    def close(self) -> None:
        """Close explicitly so close errors are seen."""

    def settings(self) -> dict[str, str]:
        """The knobs in effect (sync mapping, compression, cache...), for the result file."""
        return {}

    def settle(self) -> str:
        """The untimed settle step: flush and compact (or wait until no compaction is pending);
        returns what was done. Without one the phase is N/A."""
        raise Unsupported("this engine has no settle (flush and compact) step")

    def internals(self) -> dict[str, float]:
        """The store's own counters, read at each step's end (never timed); {} when it has none."""
        return {}


@dataclass(frozen=True)
class Descriptor:
    """One registry line points at one of these (EngineDescriptor in Rust)."""

    name: str
    description: str
    capabilities: tuple[str, ...]  # names of CAPABILITIES, in that order
    options: tuple[OptionSpec, ...]
    version: Callable[[], str]
    unavailable: Callable[[], Optional[str]]  # None when the engine can run here, else why not
    open: Callable[[OpenArgs], Engine]
