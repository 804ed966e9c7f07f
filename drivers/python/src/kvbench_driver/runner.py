"""Executes the steps of a job and reports raw counters (docs/protocol.md).

An ops step runs on `threads` Python threads (they share the interpreter lock; kvbench says so
in the result). Thread t takes units j = t, t + threads, ... a chunk at a time: numpy derives the
chunk's records, keys and values first (derive.py); one loop, `timed`, then calls the engine for
each unit between two perf_counter_ns() reads; the chunk's samples are then counted into
histograms and its reads verified, outside the timed calls. Garbage collection is off meanwhile.
"""

from __future__ import annotations

import gc
import itertools
import struct
import threading
import time
from array import array
from bisect import bisect_left
from functools import partial
from operator import call

import numpy as np

from . import hist
from .derive import Dataset, Stream, u64
from .engine import OpenArgs, OptionError, Unsupported, describe_error
from .plan import Plan
from .sysinfo import delta, evict, usage

pc = time.perf_counter_ns
MAX_ERRORS = 1000
LOCK = 1 << 31
CHUNK = 8192
WRITES = ("update", "insert", "delete", "rmw")
SKIP = Exception("a failed multi-get request")  # its keys are not checked: the request counts as an error


def fail(e: BaseException):
    """A unit whose preparation failed: the error is counted as the unit's own."""
    raise e


def paced(args, dues: list):
    """Open loop: each unit's argument is handed to the timed loop no earlier than its due time,
    sleeping until then and spinning only for the last 50 µs."""
    for a, due in zip(args, dues):
        left = due - pc()
        if left > 50_000:
            time.sleep((left - 50_000) / 1e9)
        while pc() < due:
            pass
        yield a


def timed(fn, args, out: list, ends: list, lat: list, i: int):
    """The one timed loop: call fn(a) for each a of the iterator `args` between two clock reads,
    keeping what it returned (or the exception it raised) at out[i], i + 1, ..., the second
    read at ends[i] and the difference at lat[i] (a small int: numpy converts those fastest).
    Returns the index after the last call and the exception that stopped the loop, if any; the
    caller may go on from there. Steps that write pass fn = operator.call and prepared calls
    (`Ops.writing`). Everything the loop touches is a local: no lookup per call."""
    clock = pc
    t0 = clock()
    try:
        for a in args:
            t0 = clock()
            v = fn(a)
            t1 = clock()
            out[i] = v
            ends[i] = t1
            lat[i] = t1 - t0
            i += 1
    except Exception as e:  # noqa: BLE001 - the engine's error is counted, not fatal
        t1 = clock()
        out[i], ends[i], lat[i] = e, t1, t1 - t0
        return i + 1, e
    return i, None


def int64s(xs: list, n: int) -> np.ndarray:
    """The first n ints of xs as an array: struct packs them in one C loop, about 2.5 times
    faster than np.fromiter (numpy converts each item on its own)."""
    return np.frombuffer(struct.pack(f"{n}q", *(xs if n == len(xs) else xs[:n])), np.int64)


def slots(ends: list, n: int, origin: int, every: int):
    """(interval, first, end) of the units whose calls ended in each interval; calls end in order,
    so two bisections a boundary place them without a number per unit."""
    if n == 0:
        return
    lo, last = 0, (ends[n - 1] - origin) // every
    for s in range((ends[0] - origin) // every, last + 1):
        hi = n if s == last else bisect_left(ends, origin + (s + 1) * every, lo, n)
        yield s, lo, hi
        lo = hi


class State:
    """Per-record state (plan-format.md, "State"): (writes << 1) | present, bit 31 a writer's
    lock. Implicit (the state right after the load) until a step writes after the load."""

    def __init__(self, ds: dict):
        self.loaded, self.total = ds["loaded"], ds["total"]
        self.arr = self.view = None
        self.mu = threading.Lock()

    def materialize(self) -> None:
        if self.arr is None:
            self.arr = array("I", bytes(4 * self.total))
            self.view = np.frombuffer(self.arr, np.uint32)
            self.view[: self.loaded] = 3

    def gather(self, cs: np.ndarray) -> np.ndarray:
        if self.view is None:
            return np.where(cs < self.loaded, 3, 0).astype(np.uint32)
        return self.view[cs.astype(np.intp)]

    def lock(self, cs) -> None:
        """Set bit 31 of each record, in record order so two writers never wait in a cycle."""
        arr = self.arr
        for c in sorted(set(cs)):
            while True:
                with self.mu:
                    s = arr[c]
                    if not s & LOCK:
                        arr[c] = s | LOCK
                        break
                time.sleep(0)


class Tally:
    """What one thread (or, merged, a step) measured."""

    COUNTS = ("ops", "requests", "errors", "mismatches", "missing", "busy")

    def __init__(self):
        self.ops = self.requests = self.errors = self.mismatches = self.missing = self.busy = 0
        self.first_error = self.first_kind = self.unsupported = None
        self.hist: dict = {}  # op kind -> counts, when a step has several
        self.only = None  # the op kind of a step that has one: its counts are the intervals' sum
        self.intervals: dict = {}  # interval -> [ops, counts]
        self.end = 0

    def error(self, e: BaseException) -> bool:
        """Count an engine error; True when the thread must stop."""
        if isinstance(e, Unsupported):
            self.unsupported = str(e)
            return True
        self.errors += 1
        if self.first_error is None:
            self.first_error, self.first_kind = describe_error(e), error_kind(e)
        return self.errors >= MAX_ERRORS

    def record(self, names: list, kinds: np.ndarray, busy: np.ndarray, lat: np.ndarray, spans, ops: np.ndarray
               ) -> None:
        """Count a chunk's units, and their samples (`lat`) into the histograms of their op kind
        and of the intervals `spans` (from `slots`)."""
        self.ops += int(ops.sum())
        self.requests += len(ops)
        self.busy += int(busy.sum())
        idx = hist.index(lat)
        if len(names) == 1:
            self.only = names[0]
        for k in np.flatnonzero(np.bincount(kinds)).tolist() if len(names) > 1 else []:  # np.unique costs more
            if names[k] not in self.hist:
                self.hist[names[k]] = hist.new()
            hist.add(self.hist[names[k]], idx[kinds == k])
        for i, lo, hi in spans:
            iv = self.intervals.get(i) or self.intervals.setdefault(i, [0, hist.new()])
            iv[0] += int(ops[lo:hi].sum())
            hist.add(iv[1], idx[lo:hi])

    def histograms(self) -> dict:
        """op kind -> counts; each unit is counted in one interval, so a step of one kind sums
        its intervals rather than count every sample twice."""
        if self.only is None:
            return self.hist
        return {self.only: sum((h for _, h in self.intervals.values()), hist.new())}

    def merge(self, o: Tally) -> None:
        for f in self.COUNTS:
            setattr(self, f, getattr(self, f) + getattr(o, f))
        if self.first_error is None:
            self.first_error, self.first_kind = o.first_error, o.first_kind
        self.unsupported = self.unsupported or o.unsupported
        self.only = self.only or o.only
        for k, h in o.hist.items():
            self.hist[k] = self.hist.get(k, 0) + h
        for i, (n, h) in o.intervals.items():
            m, g = self.intervals.get(i, (0, 0))
            self.intervals[i] = [m + n, g + h]


class Chunk:
    """One thread's units `js` out of every thread's units [u0, u1), derived before any is timed:
    each operation's kind, record, canonical record, key, and the value a write will write."""

    def __init__(self, ops: Ops, js: np.ndarray, u0: int, u1: int, carry: int):
        s, size, n = ops.s, ops.size, ops.s["count"]
        if size == 1:  # a unit is one operation, and every unit is below the step's count
            self.js, self.ks, self.us = js, js.astype(np.uint64), np.arange(len(js) + 1)
        else:
            ks = (js.astype(np.uint64)[:, None] * u64(size) + np.arange(size, dtype=np.uint64)).ravel()
            self.js, self.ks = js, ks[ks < u64(n)]
            self.us = np.append(np.arange(len(js)) * size, len(self.ks))
        self.ki = ops.stream.kind_index(self.ks)
        ib, self.carry = np.zeros(len(self.ks), np.uint64), carry
        if ops.insert_kind is not None:  # an insert's record counts the inserts of every thread before it
            lo = u0 * size
            span = ops.stream.kind_index(np.arange(lo, min(u1 * size, n), dtype=np.uint64)) == ops.insert_kind
            before = carry + np.cumsum(span) - span
            ib, self.carry = before[(self.ks - u64(lo)).astype(np.intp)].astype(np.uint64), carry + int(span.sum())
            rec = ib.copy() if ops.kinds == ["insert"] else ops.stream.records(self.ks, ib)
            rec[self.ki == ops.insert_kind] = u64(s["insert_base"]) + ib[self.ki == ops.insert_kind]
        else:
            rec = ops.stream.records(self.ks, ib)
        self.pos, self.cs = rec, ops.canon(rec)
        target = self.cs
        if "scan" in ops.kinds:  # a scan's record is a sorted position; it starts at that key
            target, scans = self.cs.copy(), self.ki == ops.kinds.index("scan")
            self.limits = ops.stream.scan_lens(self.ks, rec).tolist()
            target[scans] = ops.sorted_at(np.minimum(rec[scans], u64(ops.positions() - 1)))
        self.keys = ops.data.keys(rec if s["kind"] == "load" else target)
        if s["kind"] == "load":
            self.vals = ops.data.values(self.cs, np.zeros(len(rec), np.uint64))
        elif ops.writes:
            self.predict(ops)

    def predict(self, ops: Ops) -> None:
        """The values this chunk's writes will write if no other thread writes their records,
        derived in one call (a writer checks each under its lock and derives again if wrong)."""
        st, over, puts = ops.state.arr, {}, []
        self.cl, self.kl = self.cs.tolist(), self.ki.tolist()
        self.pred = [0] * len(self.cl)
        for q, (c, k) in enumerate(zip(self.cl, self.kl)):
            kind = ops.kinds[k]
            if kind in WRITES:
                self.pred[q] = w = (over[c] if c in over else st[c] & ~LOCK) >> 1
                over[c] = w << 1 if kind == "delete" else ((w + 1) << 1) | 1
                puts += [q] if kind != "delete" else []
        self.vals = [None] * len(self.cl)
        p = np.array(puts, np.intp)
        for q, v in zip(puts, ops.data.values(self.cs[p], np.array(self.pred, np.uint64)[p])):
            self.vals[q] = v


class Ops:
    """One ops step: its threads, the calls of each chunk, and the checks of what they read."""

    def __init__(self, w: Worker, s: dict):
        self.w, self.s, self.data, self.state = w, s, w.dataset, w.state
        self.stream = Stream(s)
        self.kinds = list(s["kinds"]) if s["kind"] == "mixed" else [s["kind"]]
        self.size = {"multi-get": s["keys_per_request"], "get": 1, "scan": 1, "rmw": 1, "mixed": 1}.get(
            s["kind"], s["batch"])
        self.insert_kind = self.kinds.index("insert") if "insert" in self.kinds else None
        self.writes = any(k in WRITES for k in self.kinds)
        self.threads, self.every = s["threads"], w.job["interval_ms"] * 1_000_000
        self.gen, self.generations, self.stop = 0, itertools.count(1), False

    def sorted_at(self, p: np.ndarray) -> np.ndarray:
        plan = self.data.plan
        if self.w.job["dataset"]["ordered"] or plan is None or plan.sorted is None:
            return p
        return plan.sorted[p.astype(np.intp)].astype(np.uint64)

    def positions(self) -> int:
        """Sorted positions a scan walks: the distinct keys."""
        plan = self.data.plan
        return self.w.job["dataset"]["total"] if plan is None or plan.sorted is None else len(plan.sorted)

    def canon(self, rs: np.ndarray) -> np.ndarray:
        plan = self.data.plan
        return rs if plan is None or plan.canon is None else plan.canon[rs.astype(np.intp)].astype(np.uint64)

    def run(self) -> Tally:
        if self.writes:
            self.state.materialize()
        tallies = [Tally() for _ in range(self.threads)]
        self.done = [0] * self.threads
        # The threads start together: the rate schedule and the step's wall time count from then.
        self.ready = threading.Barrier(self.threads, action=lambda: setattr(self, "origin", pc()))
        threads = [threading.Thread(target=self.thread, args=(t, tallies[t])) for t in range(self.threads)]
        for t in threads:
            t.start()
        for t in threads:
            while t.is_alive():
                t.join(max(self.w.job["progress_ms"], 10) / 1000)
                if t.is_alive():
                    self.w.emit({"event": "progress", "index": self.s["index"], "done": sum(self.done),
                                 "total": self.s["count"]})
        total = Tally()
        for t in tallies:
            total.merge(t)
        total.busy_max = max(t.busy for t in tallies)
        total.start, total.end = self.origin, max(t.end for t in tallies)
        return total

    def thread(self, t: int, tally: Tally) -> None:
        self.ready.wait()
        reader = None
        try:
            if any(k not in ("load", "update", "insert", "delete") for k in self.kinds) and not self.s["open_per_op"]:
                reader = self.w.engine.reader()
            units = max(1, CHUNK // self.size)
            # Kept from chunk to chunk: each call's result replaces (and frees) the one the
            # previous chunk left in its slot, so the new value reuses memory just freed.
            lists = [None] * units, [0] * units, [0] * units
            for ch in self.chunks(t):
                self.chunk(ch, tally, reader, lists)
                self.done[t] += len(ch.ks)
                if self.stop:
                    break
        except Exception as e:  # noqa: BLE001 - a failing reader or engine: the step reports it
            tally.error(e)
            self.stop = True
        finally:
            if reader is not None:
                reader.close()
            tally.end = pc()

    def chunks(self, t: int):
        """Thread t's units (j = t, t + threads, ...), a span of every thread's units at a time."""
        n_units = -(-self.s["count"] // self.size)
        span, carry = max(1, CHUNK // self.size) * self.threads, 0
        for u0 in range(0, n_units, span):
            u1 = min(u0 + span, n_units)
            js = np.arange(u0 + t, u1, self.threads)
            if len(js) == 0:
                return
            ch = Chunk(self, js, u0, u1, carry)
            carry = ch.carry
            yield ch

    def chunk(self, ch: Chunk, tally: Tally, reader, lists: tuple) -> None:
        """Run and time a chunk's units, then count and check them; `lists` receive each
        call's result, end time and duration (they may be longer than the chunk)."""
        n, reads = len(ch.js), []
        out, ends, lat = lists
        writer = self.writing(ch, reader, out, reads, tally) if self.writes else None
        fn, args = (call, writer) if writer is not None else self.calls(ch, reader)
        args, dues = iter(args), None
        if self.s["rate"]:
            dues = (self.origin + ch.js * (1e9 / self.s["rate"])).astype(np.int64)
            args = paced(args, dues.tolist())
        n, e = timed(fn, args, out, ends, lat, 0)
        while e is not None:
            if tally.error(e):
                self.stop = True
                break
            n, e = timed(fn, args, out, ends, lat, n)
        if writer is not None:
            writer.close()  # a unit stopped by an error still publishes its records' states
        busy = int64s(lat, n)
        late = busy if dues is None else int64s(ends, n) - dues[:n]
        tally.record(self.kinds, ch.ki[ch.us[:n]], busy, late, slots(ends, n, self.origin, self.every),
                     np.diff(ch.us[: n + 1]))
        if self.s["verify"] and reads:
            qs, s1, s2, found = zip(*reads)
            self.check_reads(ch.cs[list(qs)], np.array(s1, np.uint32), np.array(s2, np.uint32), list(found), tally)
        elif writer is None:
            self.check(ch, out if n == len(out) else out[:n], tally)  # a slice would touch every value

    def calls(self, ch: Chunk, reader):
        """The function and the arguments of a chunk of a step that does not write."""
        kind, keys = self.s["kind"], ch.keys
        if kind == "get":
            return (self.w.open_get if self.s["open_per_op"] else reader.get), keys
        if kind == "scan":
            return scanner(reader), zip(keys, ch.limits)
        us = ch.us.tolist()
        if kind == "load":
            return self.w.engine.write, [list(zip(keys[a:b], ch.vals[a:b])) for a, b in zip(us, us[1:])]
        return reader.multi_get, [keys[a:b] for a, b in zip(us, us[1:])]

    def writing(self, ch: Chunk, reader, out: list, reads: list, tally: Tally):
        """The calls of a chunk of a step that writes, one unit at a time: a write's records are
        claimed just before its call is handed to the timed loop, and their states published
        when the loop asks for the next call (or closes this generator); a read notes its
        record's state before and after its call, so that a concurrent write can be allowed."""
        st, write, scan = self.state.arr, self.w.engine.write, reader and scanner(reader)
        us = ch.us.tolist()
        for u, (a, b) in enumerate(zip(us, us[1:])):
            kind, c, key = self.kinds[ch.kl[a]], ch.cl[a], ch.keys[a]
            if kind in ("get", "scan"):
                s1 = st[c]
                yield self.fresh(reader) or (partial(reader.get, key) if kind == "get" else
                                             partial(scan, (key, ch.limits[a])))
                if kind == "get":
                    reads.append((a, s1, st[c], out[u]))
                elif not isinstance(out[u], Exception):
                    self.check_scan(int(ch.pos[a]), ch.limits[a], out[u], tally, exact=self.threads == 1)
                continue
            batch, new, old = self.claim(ch, a, b, kind)
            try:
                yield (self.fresh(reader) or partial(rmw, (reader.get, write, batch))) if kind == "rmw" else partial(
                    write, batch)
            finally:
                self.gen = next(self.generations)
                for r, s in (old if isinstance(out[u], Exception) else new).items():
                    st[r] = s
            if kind == "rmw" and not isinstance(out[u], Exception):
                reads.append((a, old[c], old[c], out[u]))

    def fresh(self, reader):
        """Writers publish a new generation after their commit and before their records' states,
        so a reader that loaded a new state sees a new generation here and takes a new snapshot
        (a reader holding one, as LMDB's read transaction, must see every committed write).
        Returns None, or a call that fails with the refresh's error."""
        if getattr(reader, "seen", -1) != self.gen:
            try:
                reader.refresh()
            except Exception as e:  # noqa: BLE001 - counted as the unit's error
                return partial(fail, e)
            reader.seen = self.gen
        return None

    def claim(self, ch: Chunk, a: int, b: int, kind: str):
        """Lock the unit's records when several threads write, and build its batch with the
        versions their states ask for: the chunk's prediction unless another thread wrote."""
        st = self.state.arr
        if self.threads > 1:
            self.state.lock(ch.cl[a:b])
        old = {c: st[c] & ~LOCK for c in ch.cl[a:b]}
        new, batch = dict(old), []
        for q in range(a, b):
            c = ch.cl[q]
            w = new[c] >> 1
            v = None if kind == "delete" else ch.vals[q] if ch.pred[q] == w else self.data.values(c, w)[0]
            batch.append((ch.keys[q], v))
            new[c] = w << 1 if kind == "delete" else ((w + 1) << 1) | 1
        return batch, new, old

    def check(self, ch: Chunk, out: list, tally: Tally) -> None:
        """Check what a step that does not write read (its states are constant)."""
        kind = self.s["kind"]
        if kind == "scan":
            for p, n, items in zip(ch.pos.tolist(), ch.limits, out):
                if not isinstance(items, Exception):
                    self.check_scan(p, n, items, tally, exact=True)
            return
        if kind == "load" or not self.s["verify"]:
            return
        found = out
        if kind == "multi-get":  # a request that failed is counted once, as an error
            found, us = [], ch.us.tolist()
            for v, a, b in zip(out, us, us[1:]):
                ok = not isinstance(v, Exception) and len(v) == b - a
                tally.mismatches += 0 if ok or isinstance(v, Exception) else b - a
                found.extend(v if ok else [SKIP] * (b - a))
        cs = ch.cs[: len(found)]
        if self.state.view is None and (len(cs) == 0 or int(cs.max()) < self.state.loaded):
            # The state right after the load, which no step changed: every record at version 0.
            self.count_wrong(found, self.data.differ(cs, np.zeros(len(cs), np.uint64), found), tally)
            return
        st = self.state.gather(cs)
        self.check_reads(cs, st, st, found, tally)

    def check_reads(self, cs: np.ndarray, s1: np.ndarray, s2: np.ndarray, found: list, tally: Tally) -> None:
        """Exact where the states before (s1) and after (s2) a read are equal and unlocked; else
        any version a concurrent writer may have made visible, or none, is right."""
        exact = (s1 == s2) & (s1 < LOCK)
        sure = np.flatnonzero(exact & ((s1 & 1) == 1))
        if len(sure) == len(found):
            self.count_wrong(found, self.data.differ(cs, (s1 >> 1) - 1, found), tally)
            return
        some = [found[q] for q in sure.tolist()]
        self.count_wrong(found, sure[self.data.differ(cs[sure], (s1[sure] >> 1) - 1, some)].tolist(), tally)
        for q in np.flatnonzero(~exact | ((s1 & 1) == 0)).tolist():
            f = found[q]
            if f is not None and not isinstance(f, Exception):
                tally.mismatches += bool(exact[q]) or not self.any_version(int(cs[q]), int(s1[q]), int(s2[q]), f)

    @staticmethod
    def count_wrong(found: list, wrong: list, tally: Tally) -> None:
        """Count the reads `wrong` (indices into found) that returned no value, or another."""
        for q in wrong:
            if not isinstance(found[q], Exception):
                tally.missing += found[q] is None
                tally.mismatches += found[q] is not None

    def any_version(self, c: int, s1: int, s2: int, found: bytes) -> bool:
        vs = np.arange(max(((s1 & ~LOCK) >> 1) - 1, 0), ((s2 & ~LOCK) >> 1) + 1, dtype=np.uint64)
        return found in self.data.values(np.full(len(vs), c, np.uint64), vs)

    def check_scan(self, p: int, limit: int, items: list, tally: Tally, exact: bool) -> None:
        """A scan from sorted position p must return the present records from p on, in key
        order, with the values their states expect; beside writers on other threads only the
        key order is checked (docs/decisions.md, "Python worker: scans among concurrent writes")."""
        tally.ops += len(items) - 1
        if not self.s["verify"]:
            return
        if not exact:
            tally.mismatches += sum(1 for x, y in zip(items, items[1:]) if y[0] < x[0])
            return
        want = self.expect_scan(p, limit)
        tally.mismatches += sum(1 for a, b in zip(items, want) if tuple(a) != b) + max(len(items) - len(want), 0)
        tally.missing += max(len(want) - len(items), 0)

    def expect_scan(self, p: int, limit: int) -> list:
        n, got, parts = self.positions(), 0, []
        while got < limit and p < n:
            hi = min(n, p + max(2 * (limit - got), 64))
            rs = self.sorted_at(np.arange(p, hi, dtype=np.uint64))
            cs = self.canon(rs)
            st = self.state.gather(cs)
            keep = np.flatnonzero((st & 1) == 1)[: limit - got]
            parts.append((rs[keep], cs[keep], st[keep]))
            got, p = got + len(keep), hi
        if not parts:
            return []
        rs, cs, st = (np.concatenate([x[i] for x in parts]) for i in range(3))
        return list(zip(self.data.keys(rs), self.data.values(cs, ((st >> 1) - 1).astype(np.uint64))))


def scanner(reader):
    scan = reader.scan
    return lambda a: list(scan(*a))


def rmw(a) -> bytes | None:
    """Read-modify-write: the read and the write of the next version, one timed unit."""
    get, write, batch = a
    v = get(batch[0][0])
    write(batch)
    return v


def error_kind(e: BaseException) -> str:
    if isinstance(e, Unsupported):
        return "unsupported"
    return "option" if isinstance(e, OptionError) else "io" if isinstance(e, OSError) else "store"


class Worker:
    """The engine of one job and the steps run on it."""

    def __init__(self, job: dict, desc, options, emit):
        self.job, self.desc, self.options, self.emit = job, desc, options, emit
        self.dataset = Dataset(job["dataset"], Plan(job["plan"]) if job["plan"] else None)
        self.state = State(job["dataset"])
        self.engine = None

    def args(self, mode: str) -> OpenArgs:
        ds = self.job["dataset"]
        return OpenArgs(dir=self.job["dir"], options=self.options, sync=self.job["sync"], mode=mode,
                        expected_records=ds["open_records"], expected_bytes=ds["open_bytes"], url=self.job["url"],
                        token=self.job["token"])

    def step(self, s: dict) -> dict:
        r = {"event": "step", "index": s["index"], "step": s["step"], "error": None, "wall_ns": 0, "evicted": 0,
             "ops": 0, "requests": 0, "errors": 0, "mismatches": 0, "missing": 0, "busy_ns": 0, "busy_max_ns": 0}
        before, t0 = usage(), pc()
        try:
            getattr(self, s["step"])(s, r)
            r["wall_ns"] = r["wall_ns"] or pc() - t0
        except Exception as e:  # noqa: BLE001 - the step failed: the result says how
            r.update(error=describe_error(e), error_kind=error_kind(e), wall_ns=pc() - t0)
        r["usage"] = delta(before)
        return r

    def open(self, s: dict, r: dict) -> None:
        t0 = pc()
        self.engine = self.desc.open(self.args(s["mode"]))
        r["wall_ns"] = pc() - t0
        r["settings"] = dict(sorted(self.engine.settings().items()))

    def prepare(self, s: dict, r: dict) -> None:
        if self.engine is not None:
            self.engine.prepare()

    def close(self, s: dict, r: dict) -> None:
        engine, self.engine = self.engine, None
        if engine is not None:
            engine.close()

    def evict(self, s: dict, r: dict) -> None:
        r["evicted"] = evict(self.job["dir"])

    def open_get(self, key: bytes):
        """One sample of open_per_op: open, read one key, close."""
        e = self.desc.open(self.args(self.op_mode))
        try:
            rd = e.reader()
            try:
                return rd.get(key)
            finally:
                rd.close()
        finally:
            e.close()

    def ops(self, s: dict, r: dict) -> None:
        self.op_mode = s["mode"]
        gc.collect()
        gc.disable()
        try:
            t = Ops(self, s).run()
            if s["finish"] and not t.errors:
                t0 = pc()
                self.engine.finish_load()
                t.end = pc()
                t.busy, t.busy_max = t.busy + t.end - t0, t.busy_max + t.end - t0
        finally:
            gc.enable()
        r.update(wall_ns=t.end - t.start, ops=t.ops, requests=t.requests, errors=t.errors, mismatches=t.mismatches,
                 missing=t.missing, busy_ns=t.busy, busy_max_ns=t.busy_max,
                 hist={k: hist.encode(h) for k, h in sorted((t.histograms() or {s["kind"]: hist.new()}).items())},
                 intervals=[{"t_ms": i * self.job["interval_ms"], "ops": n, "hdr": hist.encode(h)}
                            for i, (n, h) in sorted(t.intervals.items())])
        if t.first_error:
            r.update(first_error=t.first_error, error_kind=t.first_kind)
        if t.unsupported:
            r.update(error=t.unsupported, error_kind="unsupported")


def calibrate(n: int = 20_000) -> float:
    """What the timed loop costs per operation around a call that does nothing."""
    out = [None] * n
    start = pc()
    timed(bool, iter(out), out, [0] * n, [0] * n, 0)
    return (pc() - start) / n
