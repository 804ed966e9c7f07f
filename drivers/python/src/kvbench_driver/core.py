"""ctypes bindings of kvbench's worker core (crates/kvbench-ffi/kvbench.h, the contract; Abi
reads its numbers from the library): the library derives the plan, verifies, keeps the
histograms and writes the step events; this worker only calls the engine. ctypes.CDLL releases
the interpreter lock during each call, so a thread that kvb_next keeps waiting for a record lock
does not stop the others."""

from __future__ import annotations

import ctypes
import os
from ctypes import POINTER, Structure, byref, c_char_p, c_int, c_int32, c_int64, c_size_t, c_uint8, c_uint32, c_uint64
from ctypes import c_void_p as ptr
from pathlib import Path

OUTSIDE = 0xFFFFFFFF  # kvb_error's unit for an error that is not in a unit
BUILD = "cargo build --release -p kvbench-ffi"


class Step(Structure):
    _fields_ = [("step", c_int32), ("mode", c_int32), ("threads", c_uint32), ("reads", c_uint8),
                ("open_per_op", c_uint8), ("interval_ms", c_uint32)]


class Report(Structure):
    _fields_ = [("wall_ns", c_uint64), ("start_unix_ns", c_uint64), ("finish_ns", c_uint64), ("error", c_char_p),
                ("error_kind", c_char_p), ("finish_error", c_char_p), ("settings", c_char_p), ("runtime", c_char_p),
                ("settled", c_char_p), ("internals", c_char_p)]


class Block(Structure):
    _fields_ = [("units", c_uint32), ("kind", ptr), ("refresh", ptr), ("due", ptr), ("key_end", ptr),
                ("scan_len", ptr), ("key", ptr), ("key_off", ptr), ("val", ptr), ("val_off", ptr), ("del_", ptr),
                # Per key, what a get must read: this worker hands every value back instead (a
                # comparison here would first copy the expected bytes into a Python object).
                ("exp", ptr), ("exp_len", ptr), ("plain", c_uint8)]


SIGNATURES = {
    "kvb_job_open": (ptr, [c_char_p, c_int]),
    "kvb_job_error": (c_char_p, [ptr]),
    "kvb_job_free": (None, [ptr]),
    "kvb_emit": (None, [ptr, c_char_p]),
    "kvb_step_begin": (POINTER(Step), [ptr]),
    "kvb_finish_due": (c_int, [ptr]),
    "kvb_protocol": (c_uint32, []),
    "kvb_abi_constant": (c_int, [c_size_t, POINTER(c_char_p), POINTER(c_int64)]),
    "kvb_step_end": (c_int, [ptr, POINTER(Report)]),
    "kvb_thread_new": (ptr, [ptr, c_uint32, c_uint32]),
    "kvb_set_origin": (None, [ptr, c_int64]),
    "kvb_thread_end": (None, [ptr]),
    "kvb_next": (POINTER(Block), [ptr]),
    "kvb_done": (None, [ptr, c_uint32, ptr, c_char_p, ptr]),
    "kvb_error": (c_int, [ptr, c_uint32, c_char_p, c_char_p, c_int64]),
    "kvb_scan": (None, [ptr, c_char_p, c_size_t]),
}


class MissingLibrary(Exception):
    pass


def library_path() -> Path:
    """$KVBENCH_FFI_LIB, else the release build of the repository this package's source is in."""
    if os.environ.get("KVBENCH_FFI_LIB"):
        return Path(os.environ["KVBENCH_FFI_LIB"])
    return Path(__file__).resolve().parents[4] / "target" / "release" / "libkvbench_ffi.so"


def load() -> ctypes.CDLL:
    path = library_path()
    if not path.is_file():
        raise MissingLibrary(f"the worker core {path} is missing: build it with `{BUILD}` in the repository "
                             "(drivers/python/setup.sh does), or set KVBENCH_FFI_LIB")
    lib = ctypes.CDLL(str(path))
    for name, (res, args) in SIGNATURES.items():
        try:
            fn = getattr(lib, name)
        except AttributeError:
            raise MissingLibrary(f"the worker core {path} has no {name}: it is older than this worker, rebuild it "
                                 f"with `{BUILD}`") from None
        fn.restype, fn.argtypes = res, args
    return lib


class Abi:
    """kvbench_abi.h's numbers as the library states them (kvb_abi_constant), by name without
    the KVB_ prefix (abi.GET, abi.SETTLE, ...), and `modes`, the open modes' names by number.
    The Rust source (kvbench-worker's abi.rs) is their one source: this worker copies none."""

    def __init__(self, lib):
        name, value, i = c_char_p(), c_int64(), 0
        while lib.kvb_abi_constant(i, byref(name), byref(value)):
            setattr(self, name.value.decode().removeprefix("KVB_"), value.value)
            i += 1
        self.modes = {self.READ_WRITE: "read-write", self.READ_ONLY: "read-only", self.SECONDARY: "secondary"}


def cstr(s) -> bytes | None:
    return None if s is None else str(s).encode()
