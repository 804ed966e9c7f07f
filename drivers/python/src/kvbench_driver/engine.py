"""The engine interface every Python store implements, mirroring crates/kvbench-core/src/engine.rs.

Adapters never time anything: the worker owns every clock read. An adapter translates one call
into the binding's API and lets the binding's exceptions propagate (the runner counts them), or
raises :class:`Unsupported` for something the engine cannot do at all (the phase is then N/A).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Optional, Sequence


class EngineError(Exception):
    """The store failed; str() is the message the result shows."""


class Unsupported(EngineError):
    """The engine cannot do this at all; the phase is reported N/A with `what`."""

    def __init__(self, what: str):
        super().__init__(what)
        self.what = what

    def __str__(self) -> str:
        return f"unsupported: {self.what}"


class OptionError(EngineError):
    def __str__(self) -> str:
        return f"invalid option: {self.args[0]}"


def describe_error(e: BaseException) -> str:
    """One line for a result's reason: the binding's message, with its type when it says little."""
    if isinstance(e, EngineError):
        return str(e)
    text = str(e).strip() or repr(e)
    return f"{type(e).__name__}: {text}"


@dataclass(frozen=True)
class Capabilities:
    ordered_scan: bool = False
    multi_get: bool = False
    batch: bool = False
    read_only_open: bool = False
    secondary_open: bool = False
    persistent: bool = False
    build_once: bool = False
    delete: bool = False

    def names(self) -> list[str]:
        """Same names and order as Capabilities::names() in Rust."""
        pairs = [
            (self.ordered_scan, "scan"),
            (self.multi_get, "multi-get"),
            (self.batch, "batch"),
            (self.read_only_open, "read-only"),
            (self.secondary_open, "secondary"),
            (self.persistent, "persistent"),
            (self.build_once, "build-once"),
            (self.delete, "delete"),
        ]
        return [name for on, name in pairs if on]


@dataclass(frozen=True)
class OptionSpec:
    name: str
    kind: str  # "bool", "int", "enum" or "text"
    default: str
    doc: str
    choices: tuple[str, ...] = ()

    def describe_kind(self) -> str:
        return {
            "bool": "true or false",
            "int": "an integer (sizes may say 64m, 1g)",
            "text": "a string",
        }.get(self.kind, "one of " + ", ".join(self.choices))

    def to_json(self) -> dict[str, Any]:
        d: dict[str, Any] = {"name": self.name, "kind": self.kind, "default": self.default, "doc": self.doc}
        if self.kind == "enum":
            d["choices"] = list(self.choices)
        return d


def parse_size(s: str) -> Optional[int]:
    """`123`, `64k`, `64m`, `1g` (powers of 1024), as parse_size in Rust."""
    s = s.strip().lower()
    if not s:
        return None
    mult = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30}.get(s[-1])
    num = s[:-1] if mult else s
    if "_" in num:
        return None
    try:
        n = int(num.strip(), 10)
    except ValueError:
        return None
    return n * (mult or 1)


def json_text(v: Any) -> str:
    """A JSON value as serde_json's Display prints it (compact)."""
    return json.dumps(v, separators=(",", ":"), ensure_ascii=False)


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and -(1 << 63) <= v < (1 << 63)


class Options:
    """Validated options of one engine variant (Options in Rust, same rules and messages)."""

    def __init__(self, values: dict[str, Any], specs: Sequence[OptionSpec]):
        self.values = dict(values)
        self.specs = list(specs)

    @staticmethod
    def parse(engine: str, specs: Sequence[OptionSpec], given: dict[str, Any]) -> Options:
        for k in sorted(given):
            v = given[k]
            spec = next((s for s in specs if s.name == k), None)
            if spec is None:
                known = ", ".join(s.name for s in specs) or "none"
                raise ValueError(f"engine {engine} has no option `{k}` (options: {known})")
            if spec.kind == "bool":
                ok = isinstance(v, bool)
            elif spec.kind == "int":
                ok = _is_int(v) or (isinstance(v, str) and parse_size(v) is not None)
            elif spec.kind == "enum":
                ok = isinstance(v, str) and v in spec.choices
            else:
                ok = isinstance(v, str)
            if not ok:
                raise ValueError(f"engine {engine} option `{k}` = {json_text(v)}: expected {spec.describe_kind()}")
        return Options(given, specs)

    def raw(self, name: str) -> Any:
        if name in self.values:
            return self.values[name]
        spec = next((s for s in self.specs if s.name == name), None)
        if spec is None or spec.default == "":
            return None
        if spec.kind == "bool":
            return spec.default == "true"
        return spec.default

    def bool(self, name: str) -> bool:
        v = self.raw(name)
        return v if isinstance(v, bool) else False

    def int(self, name: str) -> Optional[int]:
        v = self.raw(name)
        if _is_int(v):
            return v
        if isinstance(v, str):
            return parse_size(v)
        return None

    def text(self, name: str) -> Optional[str]:
        v = self.raw(name)
        if v is None:
            return None
        return v if isinstance(v, str) else json_text(v)

    def effective(self) -> dict[str, Any]:
        """Options as given plus defaults, for the result file."""
        out = {}
        for s in self.specs:
            v = self.raw(s.name)
            if v is not None:
                out[s.name] = v
        return dict(sorted(out.items()))


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
        """Values of `keys` in order; the default loops over get (engines with a native call
        override it and declare multi_get)."""
        get = self.get
        return [get(k) for k in keys]

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


@dataclass(frozen=True)
class Descriptor:
    """One registry line points at one of these (EngineDescriptor in Rust)."""

    name: str
    description: str
    capabilities: Capabilities
    options: tuple[OptionSpec, ...]
    version: Callable[[], str]
    # None when the engine can run here, else the reason it cannot.
    unavailable: Callable[[], Optional[str]]
    open: Callable[[OpenArgs], Engine]
