"""Executes a job's steps over the worker core (core.py; docs/protocol.md, "Worker core").

The core derives each step and each thread's units, verifies what was read and writes the step
events; this module opens, prepares and closes the engine, and runs the engine calls of the
blocks of units the core hands each thread, each unit between two perf_counter_ns() reads.
A block's keys are cut out of the core's buffer before anything is timed; its times and values
go back in one kvb_done call. Garbage collection is off during an ops step.
"""

from __future__ import annotations

import gc
import json
import struct
import threading
import time
from array import array
from ctypes import byref, string_at
from functools import lru_cache
from typing import Sequence

from . import core
from .core import OUTSIDE, Report, cstr
from .engine import EngineError, OpenArgs, OptionError, Unsupported, describe_error

pc = time.perf_counter_ns
# Units per kvb_next: enough to amortise the ctypes calls; small enough that a block's values
# joined stay below malloc's mmap threshold (a fresh mapping per block costs its page faults:
# 4096 values of 100 bytes took 10 times longer to join than 512).
BLOCK = 512
SCAN_FLUSH = 1 << 20  # a scan hands its records to kvb_scan when its buffer passes this size
NOT_DUE = b"\xff" * 8 * BLOCK  # due times of a block that runs at once (-1 each)
SPIN_NS = 100_000  # an open-loop wait sleeps until this close to the due time, then spins (a sleep
# ends late by the wake-up latency; the core took away the timer slack of the thread)
U32 = struct.Struct("<I")
# int64 times as C longs where those are 8 bytes: CPython converts a large int to a long in half
# the instructions it takes for a long long (callgrind: 155 against 315 an int).
I64 = "l" if struct.calcsize("l") == 8 else "q"


def error_kind(e: BaseException) -> str:
    if isinstance(e, Unsupported):
        return "unsupported"
    return "option" if isinstance(e, OptionError) else "store"


def wait_until(deadline: int) -> None:
    """Sleep until SPIN_NS before the deadline (a perf_counter_ns time), then spin."""
    left = deadline - pc()
    if left > SPIN_NS:
        time.sleep((left - SPIN_NS) / 1e9)
    while pc() < deadline:
        pass


def gets(get, keys, out: list, s: list, e: list, i: int):
    """The timed loop of a block of plain gets: get(k) for each k of the iterator `keys` between
    two clock reads, the value at out[i], the times at s[i] and e[i], i + 1, ...
    Returns the index after the last unit and the exception that stopped the loop, if any (its
    unit is counted; the caller may go on with the same iterator). Every name is a local."""
    clock = pc
    t0 = clock()
    try:
        for k in keys:
            t0 = clock()
            v = get(k)
            t1 = clock()
            out[i] = v
            s[i] = t0
            e[i] = t1
            i += 1
    except Exception as x:  # noqa: BLE001 - the engine's error is counted, not fatal
        t1 = clock()
        out[i], s[i], e[i] = None, t0, t1
        return i + 1, x
    return i, None


def cut(data, offsets, n: int) -> Sequence[bytes]:
    """The n byte strings packed at data, item i at offsets[i] .. offsets[i + 1]. Keys of one
    width (every derived key kind but ycsb) are cut by one struct call, about eight times faster
    than by slices."""
    if n == 0:
        return []
    raw = string_at(offsets, 4 * (n + 1))
    offs = array("I", raw)
    w = offs[1] - offs[0]
    if offs[0] == 0 and raw == evenly(w, n):
        return widths(w, n).unpack(string_at(data, w * n))
    buf = string_at(data, offs[-1])
    return list(map(buf.__getitem__, map(slice, offs, offs[1:])))


@lru_cache(maxsize=64)
def evenly(w: int, n: int) -> bytes:
    """The offsets of n items of width w."""
    return array("I", range(0, w * (n + 1), w) if w else [0] * (n + 1)).tobytes()


@lru_cache(maxsize=64)
def widths(w: int, n: int) -> struct.Struct:
    return struct.Struct(f"{w}s" * n)


def packed(out: list) -> tuple[bytes, bytes]:
    """Values read, packed, and their lengths as int32 (-1: not found)."""
    try:
        return b"".join(out), struct.pack(f"{len(out)}i", *map(len, out))
    except TypeError:  # a None among them: the slower way
        lens = [-1 if v is None else len(v) for v in out]
        return b"".join(v for v in out if v is not None), struct.pack(f"{len(out)}i", *lens)


def open_get(desc, args: OpenArgs, key: bytes):
    """One unit of open-per-operation: open the engine, read one key, close."""
    e = desc.open(args)
    try:
        rd = e.reader()
        try:
            v = rd.get(key)
        finally:
            rd.close()
    finally:
        e.close()
    return v


def calibrate(n: int = 20_000) -> float:
    """What the timed loop costs per unit around a call that does nothing."""
    out, s, e = [None] * n, [0] * n, [0] * n
    start = pc()
    gets(bool, iter([b""] * n), out, s, e, 0)
    return (pc() - start) / n


class Thread:
    """One thread of an ops step: its kvb_thread, its reader, the blocks the core gives it."""

    def __init__(self, ops: Ops, th, reader):
        self.ops, self.lib, self.th, self.reader = ops, ops.lib, th, reader
        self.origin, self.engine, self.abi = ops.origin, ops.w.engine, ops.w.abi
        a = self.abi
        self.units = {a.GET: self.get, a.MULTI_GET: self.multi_get, a.SCAN: self.scan, a.WRITE: self.write,
                      a.RMW: self.rmw, a.OPEN_GET: self.open_get, a.WAIT: self.wait}

    def run(self) -> None:
        while True:
            b = self.lib.kvb_next(self.th).contents
            if b.units == 0:
                return
            try:
                if self.block(b):
                    return
            except BaseException:
                self.lib.kvb_done(self.th, 0, None, None, None)  # the core releases the block's records
                raise

    def block(self, b) -> bool:
        """Run a block; True when the thread must stop."""
        n = b.units
        kinds = string_at(b.kind, n)
        self.key_end = array("I", string_at(b.key_end, 4 * n))
        self.keys = cut(b.key, b.key_off, self.key_end[-1])
        plain = string_at(b.refresh, n).count(0) == n and string_at(b.due, 8 * n) == NOT_DUE[: 8 * n]
        if plain and kinds.count(self.abi.GET) == n and self.reader is not None:
            return self.get_block(n)
        return self.mixed_block(b, n, kinds)

    def get_block(self, n: int) -> bool:
        out, s, e = [None] * n, [0] * n, [0] * n
        keys, i = iter(self.keys), 0
        while True:
            i, x = gets(self.reader.get, keys, out, s, e, i)
            if x is None:
                return self.done(i, s, e, out, False)
            if self.error(i - 1, x, e[i - 1]):
                return self.done(i, s, e, out, True)

    def mixed_block(self, b, n: int, kinds: bytes) -> bool:
        """A block of any units, one at a time: refresh, wait for the due time, run."""
        a, refresh, dues = self.abi, string_at(b.refresh, n), array("q", string_at(b.due, 8 * n))
        self.scan_len = array("Q", string_at(b.scan_len, 8 * n)) if a.SCAN in kinds else None
        if a.WRITE in kinds or a.RMW in kinds:
            self.values(b)
        self.out, s, e = [None] * len(self.keys), [0] * n, [0] * n
        for u in range(n):
            kind, a = kinds[u], self.key_end[u - 1] if u else 0
            t0 = pc()
            try:
                if refresh[u] and self.reader is not None:
                    self.reader.refresh()
                if dues[u] >= 0:
                    wait_until(self.origin + dues[u])
                t0 = pc()  # a unit that fails is timed from here, a little more than its call
                s[u], e[u] = self.units[kind](a, self.key_end[u], u)
            except Exception as x:  # noqa: BLE001 - the engine's error is counted, not fatal
                s[u], e[u] = t0, pc()
                if self.error(u, x, e[u]):
                    return self.done(u + 1, s, e, self.out, True)
        return self.done(n, s, e, self.out, False)

    def values(self, b) -> None:
        """The values a block's writes write, and which keys they delete."""
        self.vals = cut(b.val, b.val_off, self.key_end[-1])
        self.dels = string_at(b.del_, self.key_end[-1])

    def done(self, n: int, s: list, e: list, out: list, stop: bool) -> bool:
        t = [0] * (2 * n)
        t[0::2], t[1::2] = s[:n], e[:n]
        got, lens = packed(out)  # one per key of the block: -1 for a unit that did not read
        self.lib.kvb_done(self.th, n, struct.pack(f"{2 * n}{I64}", *t), got, lens)
        return stop

    def error(self, u: int, x: BaseException, at: int) -> bool:
        return self.lib.kvb_error(self.th, u, cstr(error_kind(x)), cstr(describe_error(x)), at) == 1

    def get(self, a: int, z: int, u: int):
        k, get = self.keys[a], self.reader.get
        t0 = pc()
        v = get(k)
        t1 = pc()
        self.out[a] = v
        return t0, t1

    def multi_get(self, a: int, z: int, u: int):
        ks, multi_get = list(self.keys[a:z]), self.reader.multi_get
        t0 = pc()
        vs = multi_get(ks)
        t1 = pc()
        if len(vs) != len(ks):
            raise EngineError(f"multi_get returned {len(vs)} values for {len(ks)} keys")
        self.out[a:z] = vs
        return t0, t1

    def write(self, a: int, z: int, u: int):
        batch = [(self.keys[q], None if self.dels[q] else self.vals[q]) for q in range(a, z)]
        write = self.engine.write
        t0 = pc()
        write(batch)
        t1 = pc()
        return t0, t1

    def rmw(self, a: int, z: int, u: int):
        k, rd, write, batch = self.keys[a], self.reader, self.engine.write, [(self.keys[a], self.vals[a])]
        t0 = pc()
        v = rd.get(k)
        rd.refresh()
        write(batch)
        t1 = pc()
        self.out[a] = v
        return t0, t1

    def open_get(self, a: int, z: int, u: int):
        k, desc, args = self.keys[a], self.ops.w.desc, self.ops.args
        t0 = pc()
        v = open_get(desc, args, k)
        t1 = pc()
        self.out[a] = v
        return t0, t1

    def scan(self, a: int, z: int, u: int):
        """Visit up to scan_len records from the unit's key into a buffer the core checks, as
        u32le key length, key, u32le value length, value; a full buffer is handed over inside
        the timing, the rest after it."""
        key, limit, scan = self.keys[a], self.scan_len[u], self.reader.scan
        buf, pack = bytearray(), U32.pack
        t0 = pc()
        for k, v in scan(key, limit):
            buf += pack(len(k))
            buf += k
            buf += pack(len(v))
            buf += v
            if len(buf) >= SCAN_FLUSH:
                self.flush(buf)
        t1 = pc()
        self.flush(buf)
        return t0, t1

    def flush(self, buf: bytearray) -> None:
        self.lib.kvb_scan(self.th, bytes(buf), len(buf))
        buf.clear()

    def wait(self, a: int, z: int, u: int):
        t = pc()
        return t, t


class Ops:
    """One ops step: its threads, started together, and the engine's finish-load."""

    def __init__(self, w: Worker, s):
        self.w, self.lib, self.job = w, w.lib, w.job
        self.args = w.args(w.abi.modes[s.mode])
        self.threads, self.reads, self.open_per_op = s.threads, bool(s.reads) and not s.open_per_op, s.open_per_op
        self.origin = self.unix = 0
        self.ends = [0] * self.threads

    def run(self, r: Report) -> None:
        ready = threading.Barrier(self.threads, action=self.start)
        threads = [threading.Thread(target=self.thread, args=(t, ready)) for t in range(self.threads)]
        gc.collect()
        gc.disable()
        try:
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            end = max(self.ends)
            if self.lib.kvb_finish_due(self.job):
                end = self.finish(r)
        finally:
            gc.enable()
        r.wall_ns, r.start_unix_ns = end - self.origin, self.unix

    def start(self) -> None:
        self.origin, self.unix = pc(), time.time_ns()

    def finish(self, r: Report) -> int:
        t0 = pc()
        try:
            self.w.engine.finish_load()
        except Exception as e:  # noqa: BLE001 - counted as an engine error of the step
            r.finish_error = cstr(describe_error(e))
        end = pc()
        r.finish_ns = end - t0
        return end

    def thread(self, t: int, ready: threading.Barrier) -> None:
        ready.wait()
        th = self.lib.kvb_thread_new(self.job, t, BLOCK)
        self.lib.kvb_set_origin(th, self.origin)  # times go to the core as read: it subtracts the start
        reader = None
        try:
            if self.w.engine is None and not self.open_per_op:
                raise EngineError("no open engine")
            reader = self.w.engine.reader() if self.reads else None
            Thread(self, th, reader).run()
        except Exception as e:  # noqa: BLE001 - no engine, or the reader did not open: the step reports it
            self.lib.kvb_error(th, OUTSIDE, cstr(error_kind(e)), cstr(describe_error(e)), pc())
        finally:
            self.close(th, reader)
            self.ends[t] = pc()
            self.lib.kvb_thread_end(th)

    def close(self, th, reader) -> None:
        if reader is None:
            return
        try:
            reader.close()
        except Exception as e:  # noqa: BLE001 - counted as an error of the step
            self.lib.kvb_error(th, OUTSIDE, cstr(error_kind(e)), cstr(describe_error(e)), pc())


class Worker:
    """The engine of one job and the steps the core hands it."""

    def __init__(self, lib, job, spec: dict, desc, options):
        self.lib, self.job, self.spec, self.desc, self.options = lib, job, spec, desc, options
        self.engine, self.abi = None, core.Abi(lib)
        a = self.abi
        self.steps = {a.OPEN: self.open, a.PREPARE: self.prepare, a.CLOSE: self.close,
                      a.EVICTED: lambda s, r: None, a.OPS: self.ops, a.SETTLE: self.settle}

    def args(self, mode: str) -> OpenArgs:
        j, ds = self.spec, self.spec["dataset"]
        return OpenArgs(dir=j["dir"], options=self.options, sync=j["sync"], mode=mode,
                        expected_records=ds.get("open_records", 0), expected_bytes=ds.get("open_bytes", 0),
                        url=j.get("url"), token=j.get("token"))

    def run(self) -> None:
        while True:
            t0 = pc()
            s = self.lib.kvb_step_begin(self.job).contents
            if s.step == self.abi.END:
                break
            r = Report()
            if s.step == self.abi.EVICTED:  # the core evicted the files just now
                r.wall_ns = pc() - t0
            self.step(s, r)
            self.internals(r)
            if self.lib.kvb_step_end(self.job, byref(r)) == 1:
                break
        if self.engine is not None:  # a job that stopped early: close what is open, untimed
            self.engine.close()

    def step(self, s, r: Report) -> None:
        t0 = pc()
        try:
            self.steps[s.step](s, r)
        except Exception as e:  # noqa: BLE001 - the step failed: its event says how
            r.error, r.error_kind = cstr(describe_error(e)), cstr(error_kind(e))
        r.wall_ns = r.wall_ns or pc() - t0

    def internals(self, r: Report) -> None:
        """The engine's counters at the step's end, after its clock."""
        try:
            values = self.engine.internals() if self.engine is not None else {}
        except Exception:  # noqa: BLE001 - optional counters: a store that cannot give them gives none
            values = {}
        if values:
            r.internals = cstr(json.dumps(values))

    def settle(self, s, r: Report) -> None:
        if self.engine is None:
            raise EngineError("settle: the engine is not open")
        r.settled = cstr(self.engine.settle())

    def open(self, s, r: Report) -> None:
        t0 = pc()
        self.engine = self.desc.open(self.args(self.abi.modes[s.mode]))
        r.wall_ns = pc() - t0
        r.settings = cstr(json.dumps(dict(sorted(self.engine.settings().items()))))

    def prepare(self, s, r: Report) -> None:
        if self.engine is not None:
            self.engine.prepare()

    def close(self, s, r: Report) -> None:
        engine, self.engine = self.engine, None
        if engine is not None:
            engine.close()

    def ops(self, s, r: Report) -> None:
        Ops(self, s).run(r)
