"""Executes the steps of a protocol-2 job and reports raw counters (docs/protocol.md).

An ops step runs on `threads` Python threads (they share the interpreter lock; kvbench says so
in the result). Each thread takes operation units j = t, t + threads, ... in chunks: before a
chunk, numpy derives its records, keys and values (derive.py); the timed loop then only calls
the engine between two perf_counter_ns() reads and stores the two times and what the call
returned; after the chunk, the samples are counted into histograms and every read is verified,
outside the timed calls. Garbage collection is off during ops steps.
"""

from __future__ import annotations

import gc
import itertools
import threading
import time
from array import array

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
BATCHED = ("load", "update", "insert", "delete")
WRITES = ("update", "insert", "delete", "rmw")


class Failed:
    """An operation's exception, kept in place of its result."""

    __slots__ = ("e",)

    def __init__(self, e: BaseException):
        self.e = e


SKIP = Failed(None)  # in place of the values of a failed multi-get request


def wait(due: int) -> None:
    """Sleep until `due`, spinning only for the last 50 µs."""
    left = due - pc()
    if left > 50_000:
        time.sleep((left - 50_000) / 1e9)
    while pc() < due:
        pass


def timed(fn, args: list, out: list, t0s: list, t1s: list, i: int, dues):
    """Call fn(a) for args[i:], each between two clock reads, keeping what it returned in out.
    Returns the index after the last call and the exception that stopped the loop, if any."""
    t0 = 0
    try:
        if dues is None:
            for a in args[i:] if i else args:
                t0 = pc()
                v = fn(a)
                t1 = pc()
                t0s[i] = t0
                t1s[i] = t1
                out[i] = v
                i += 1
        else:
            for a in args[i:]:
                wait(dues[i])
                t0 = pc()
                v = fn(a)
                t1 = pc()
                t0s[i] = t0
                t1s[i] = t1
                out[i] = v
                i += 1
    except Exception as e:  # noqa: BLE001 - the engine's error is counted, not fatal
        t1s[i], t0s[i], out[i] = pc(), t0, Failed(e)
        return i + 1, e
    return i, None


class State:
    """Per-record state (plan-format.md, "State"): (writes << 1) | present, bit 31 a writer's
    lock. Implicit (the state right after the load) until a step writes after the load."""

    def __init__(self, ds: dict):
        self.loaded, self.total = ds["loaded"], ds["total"]
        self.arr = self.view = None
        self.mu = threading.Lock()

    def materialize(self) -> array:
        if self.arr is None:
            self.arr = array("I", bytes(4 * self.total))
            self.view = np.frombuffer(self.arr, np.uint32)
            self.view[: self.loaded] = 3
        return self.arr

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
    """What one thread measured in one step."""

    def __init__(self):
        self.ops = self.requests = self.errors = self.mismatches = self.missing = self.busy = 0
        self.first_error = self.first_kind = self.unsupported = None
        self.hist: dict = {}
        self.intervals: dict = {}
        self.start = self.end = self.n_pending = 0
        self.pending: list = []

    def error(self, e: BaseException) -> bool:
        """Count an engine error; True when the thread must stop."""
        if isinstance(e, Unsupported):
            self.unsupported = str(e)
            return True
        self.errors += 1
        if self.first_error is None:
            self.first_error, self.first_kind = describe_error(e), error_kind(e)
        return self.errors >= MAX_ERRORS

    def record(self, names, kinds, t0: np.ndarray, t1: np.ndarray, due, ops: np.ndarray, origin: int, every: int):
        """Note a chunk's samples; they are counted into histograms 64 Ki samples at a time."""
        lat = t1 - (t0 if due is None else due)
        self.busy += int((t1 - t0).sum())
        self.requests += len(t1)
        self.names = names
        self.pending.append((kinds, (t1 - origin) // every, hist.index(lat), ops))
        self.n_pending += len(t1)
        if self.n_pending >= 1 << 16:
            self.flush()

    def flush(self) -> None:
        """Count the noted samples into the histogram of their op kind and of their interval."""
        if not self.pending:
            return
        kinds, slot, idx, ops = (np.concatenate(x) for x in zip(*self.pending))
        self.pending, self.n_pending = [], 0
        one = hist.count(idx) if kinds.min() == kinds.max() and slot.min() == slot.max() else None
        for i in np.unique(kinds).tolist():
            h = self.hist.setdefault(self.names[i], hist.new())
            h += one if one is not None else hist.count(idx[kinds == i])
        for i in np.unique(slot).tolist():
            m = slot == i
            iv = self.intervals.setdefault(i, [0, hist.new()])
            iv[0] += int(ops[m].sum())
            iv[1] += one if one is not None else hist.count(idx[m])

    def merge(self, o: Tally) -> None:
        for f in ("ops", "requests", "errors", "mismatches", "missing", "busy"):
            setattr(self, f, getattr(self, f) + getattr(o, f))
        if self.first_error is None:
            self.first_error, self.first_kind = o.first_error, o.first_kind
        self.unsupported = self.unsupported or o.unsupported
        for k, h in o.hist.items():
            self.hist[k] = self.hist.get(k, 0) + h
        for i, (n, h) in o.intervals.items():
            iv = self.intervals.setdefault(i, [0, 0])
            iv[0], iv[1] = iv[0] + n, iv[1] + h


class Chunk:
    """One thread's units of a span of units [u0, u1) (every thread's), derived up front."""

    def __init__(self, ops: Ops, js: np.ndarray, u0: int, u1: int, carry: int):
        s, size, k0, k1 = ops.s, ops.size, ops.k0, ops.k1
        self.js = js
        ks = (u64(k0) + js.astype(np.uint64)[:, None] * u64(size) + np.arange(size, dtype=np.uint64)).ravel()
        self.ks = ks = ks[ks < u64(k1)]
        self.unit_start = (np.arange(len(js)) * size).tolist() + [len(ks)]
        self.ki = ops.stream.kind_index(ks)
        ib, self.carry = np.zeros(len(ks), np.uint64), carry
        if ops.insert_kind is not None:  # inserts before each op, counted over every thread's ops
            lo = k0 + u0 * size
            span = ops.stream.kind_index(np.arange(lo, min(k0 + u1 * size, k1), dtype=np.uint64)) == ops.insert_kind
            before = carry + np.cumsum(span) - span
            ib, self.carry = before[(ks - u64(lo)).astype(np.intp)].astype(np.uint64), carry + int(span.sum())
        rec = ib + u64(s["insert_base"]) if ops.kinds == ["insert"] else ops.stream.records(ks, ib)
        if ops.insert_kind is not None:
            ins = self.ki == ops.insert_kind
            rec[ins] = u64(s["insert_base"]) + ib[ins]
        ds = ops.dataset
        canon = ds.plan.canon if ds.plan is not None else None
        self.cs = rec if canon is None else canon[rec.astype(np.intp)].astype(np.uint64)
        self.pos, target = rec, self.cs.copy()
        scan = ops.kinds.index("scan") if "scan" in ops.kinds else -1
        if scan >= 0:
            self.limits = ops.stream.scan_lens(ks, rec).tolist()
            target[self.ki == scan] = ops.sorted_at(np.minimum(rec[self.ki == scan], u64(ops.positions() - 1)))
        self.keys = ds.keys(rec if s["kind"] == "load" else target)
        if s["kind"] == "load":
            self.vals = ds.values(self.cs, np.zeros(len(rec), np.uint64))
        elif ops.writes:
            self.cl, self.kl = self.cs.tolist(), self.ki.tolist()
            self.predict(ops)

    def predict(self, ops: Ops) -> None:
        """The versions this chunk's writes will write if no other thread writes their records,
        derived in one call (a thread checks each under its lock and derives again if wrong)."""
        st, names, over = ops.state.arr, ops.kinds, {}
        self.pred = pred = [0] * len(self.cl)
        puts = []
        for q, (c, k) in enumerate(zip(self.cl, self.kl)):
            kind = names[k]
            if kind in WRITES:
                s = over[c] if c in over else st[c] & ~LOCK
                pred[q] = w = s >> 1
                over[c] = w << 1 if kind == "delete" else ((w + 1) << 1) | 1
                if kind != "delete":
                    puts.append(q)
        self.vals = [None] * len(self.cl)
        p = np.array(puts, np.intp)
        for q, v in zip(puts, ops.dataset.values(self.cs[p], np.array(pred, np.uint64)[p])):
            self.vals[q] = v


class Ops:
    """One ops step: its threads, their tallies, and the loops."""

    def __init__(self, w: Worker, s: dict):
        self.w, self.s, self.dataset, self.state = w, s, w.dataset, w.state
        self.stream = Stream(s)
        self.kinds = list(s["kinds"]) if s["kind"] == "mixed" else [s["kind"]]
        self.size = s["batch"] if s["kind"] in BATCHED else s["keys_per_request"] if s["kind"] == "multi-get" else 1
        self.insert_kind = self.kinds.index("insert") if "insert" in self.kinds else None
        self.writes = any(k in WRITES for k in self.kinds)
        self.gen, self.generations, self.stop = 0, itertools.count(1), False
        self.every = w.job["interval_ms"] * 1_000_000

    def sorted_at(self, p: np.ndarray) -> np.ndarray:
        plan = self.dataset.plan
        if self.w.job["dataset"]["ordered"] or plan is None or plan.sorted is None:
            return p
        return plan.sorted[p.astype(np.intp)].astype(np.uint64)

    def positions(self) -> int:
        """Sorted positions a scan walks: the distinct keys."""
        plan = self.dataset.plan
        return self.w.job["dataset"]["total"] if plan is None or plan.sorted is None else len(plan.sorted)

    def canon(self, rs: np.ndarray) -> np.ndarray:
        plan = self.dataset.plan
        return rs if plan is None or plan.canon is None else plan.canon[rs.astype(np.intp)].astype(np.uint64)

    def run(self) -> Tally:
        s = self.s
        if self.writes:
            self.state.materialize()
        return self.phase(0, s["count"], s["threads"], timed=True)

    def phase(self, k0: int, k1: int, n_threads: int, timed: bool) -> Tally:
        self.k0, self.k1, self.T, self.timed = k0, k1, n_threads, timed
        tallies = [Tally() for _ in range(n_threads)]
        self.done = [0] * n_threads
        self.origin = pc()
        threads = [threading.Thread(target=self.thread, args=(t, tallies[t])) for t in range(n_threads)]
        for t in threads:
            t.start()
        every = self.w.job["progress_ms"]
        for t in threads:
            while t.is_alive():
                t.join(max(every, 10) / 1000)
                if timed and t.is_alive():
                    self.w.emit({"event": "progress", "index": self.s["index"], "done": sum(self.done),
                                 "total": self.s["count"]})
        total = Tally()
        for t in tallies:
            total.merge(t)
        total.busy_max = max(t.busy for t in tallies)
        total.start, total.end = min(t.start for t in tallies), max(t.end for t in tallies)
        return total

    def thread(self, t: int, tally: Tally) -> None:
        tally.start = pc()
        reader = None
        try:
            if self.s["kind"] != "load" and not self.s["open_per_op"]:
                reader = self.w.engine.reader()
            self.units(t, tally, reader)
        except Exception as e:  # noqa: BLE001 - a failing reader or engine: the step reports it
            tally.error(e)
            self.stop = True
        finally:
            if reader is not None:
                reader.close()
            tally.flush()
            tally.end = pc()

    def units(self, t: int, tally: Tally, reader) -> None:
        for ch in self.chunks(t):
            self.chunk(ch, tally, reader)
            self.done[t] += len(ch.ks)
            if tally.errors >= MAX_ERRORS or tally.unsupported:
                self.stop = True
            if self.stop:
                return

    def chunks(self, t: int):
        """Thread t's units (j = t, t + threads, ...), a span of every thread's units at a time."""
        n_units = -(-(self.k1 - self.k0) // self.size)
        span = max(1, CHUNK // self.size) * self.T
        carry = self.count_inserts(0, self.k0)
        for u0 in range(0, n_units, span):
            u1 = min(u0 + span, n_units)
            js = np.arange(u0 + t, u1, self.T)
            if len(js) == 0:
                return
            ch = Chunk(self, js, u0, u1, carry)
            carry = ch.carry
            yield ch

    def count_inserts(self, a: int, b: int) -> int:
        if self.insert_kind is None:
            return 0
        return sum(int((self.stream.kind_index(np.arange(x, min(x + 65536, b), dtype=np.uint64))
                        == self.insert_kind).sum()) for x in range(a, b, 65536))

    def chunk(self, ch: Chunk, tally: Tally, reader) -> None:
        js = ch.js
        nu = len(js)
        t0s, t1s, dues = [0] * nu, [0] * nu, None
        if self.s["rate"] and self.timed:
            dues = (self.origin + js * (1e9 / self.s["rate"])).astype(np.int64)
        if self.writes:
            nu = self.general(ch, reader, t0s, t1s, dues, tally)
        else:
            fn, args = self.simple_args(ch, reader)
            out, i = [None] * nu, 0
            while i < nu:
                i, e = timed(fn, args, out, t0s, t1s, i, None if dues is None else dues.tolist())
                if e is not None and tally.error(e):
                    nu = i
            if self.s["verify"]:
                self.verify(ch, out[:nu], tally)
        ops_u = np.diff(np.array(ch.unit_start[: nu + 1]))
        tally.ops += int(ops_u.sum())
        if self.timed:
            kinds = ch.ki[np.array(ch.unit_start[:nu], np.intp)]
            tally.record(self.kinds, kinds, np.array(t0s[:nu], np.int64), np.array(t1s[:nu], np.int64),
                         None if dues is None else dues[:nu], ops_u, self.origin, self.every)

    def simple_args(self, ch: Chunk, reader):
        kind, keys, us = self.s["kind"], ch.keys, ch.unit_start
        if kind == "load":
            return self.w.engine.write, [list(zip(keys[a:b], ch.vals[a:b])) for a, b in zip(us, us[1:])]
        if self.s["open_per_op"]:
            return self.w.open_get, keys
        if kind == "multi-get":
            return reader.multi_get, [keys[a:b] for a, b in zip(us, us[1:])]
        if kind == "scan":
            scan = reader.scan
            return (lambda a: list(scan(*a))), list(zip(keys, ch.limits))
        return reader.get, keys

    def verify(self, ch: Chunk, out: list, tally: Tally) -> None:
        """Check what the units of a step that does not write returned (its state is constant)."""
        kind, us = self.s["kind"], ch.unit_start
        if kind == "scan":
            for p, n, items in zip(ch.pos.tolist(), ch.limits, out):
                if not isinstance(items, Failed):
                    tally.ops += len(items) - 1
                    self.score_scan(items, self.expect_scan(p, n), tally)
        elif kind != "load":
            found = out
            if kind == "multi-get":
                found = []
                for v, a, b in zip(out, us, us[1:]):
                    ok = not isinstance(v, Failed) and len(v) == b - a
                    tally.mismatches += 0 if ok or isinstance(v, Failed) else b - a
                    found.extend(v if ok else [SKIP] * (b - a))
            cs = ch.cs[: len(found)]
            st = self.state.gather(cs)
            self.check_reads(cs, st, st, found, tally)

    def expect(self, cs: np.ndarray, st: np.ndarray) -> list:
        """The value a read of each record in cs must return in state st (None: no value)."""
        idx = np.flatnonzero((st & 1) == 1)
        vals = self.dataset.values(cs[idx], ((st[idx] >> 1) - 1).astype(np.uint64))
        if len(idx) == len(cs):
            return vals
        want = [None] * len(cs)
        for q, v in zip(idx.tolist(), vals):
            want[q] = v
        return want

    def check_reads(self, cs: np.ndarray, s1: np.ndarray, s2: np.ndarray, found: list, tally: Tally) -> None:
        """Exact when the states before (s1) and after (s2) a read are equal and unlocked, else
        any version a concurrent writer can have made visible, or none."""
        exact = (s1 == s2) & (s1 < LOCK)
        if exact.all() and (s1 & 1).all():  # every record present: compare in bulk
            for q in self.dataset.differ(cs, ((s1 >> 1) - 1).astype(np.uint64), found):
                if not isinstance(found[q], Failed):
                    tally.missing += found[q] is None
                    tally.mismatches += found[q] is not None
            return
        for q, (f, e) in enumerate(zip(found, self.expect(cs, np.where(exact, s1, 0).astype(np.uint32)))):
            if f == e or isinstance(f, Failed):
                continue
            if not exact[q]:
                tally.mismatches += not self.any_version(int(cs[q]), int(s1[q]), int(s2[q]), f)
            elif f is None:
                tally.missing += 1
            else:
                tally.mismatches += 1

    def any_version(self, c: int, s1: int, s2: int, found: bytes) -> bool:
        vs = np.arange(max(((s1 & ~LOCK) >> 1) - 1, 0), ((s2 & ~LOCK) >> 1) + 1, dtype=np.uint64)
        return found in self.dataset.values(np.full(len(vs), c, np.uint64), vs)

    def expect_scan(self, p: int, limit: int) -> list:
        """A scan from sorted position p returns the present records from p on, in key order,
        each with the value its state expects."""
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
        return list(zip(self.dataset.keys(rs), self.dataset.values(cs, ((st >> 1) - 1).astype(np.uint64))))

    def score_scan(self, items: list, want: list, tally: Tally) -> None:
        tally.mismatches += sum(1 for a, b in zip(items, want) if tuple(a) != b) + max(len(items) - len(want), 0)
        tally.missing += max(len(want) - len(items), 0)

    def general(self, ch: Chunk, reader, t0s: list, t1s: list, dues, tally: Tally) -> int:
        """The loop of steps that write: one unit at a time, its records claimed before the timed
        call and their states stored after it. Returns the number of units run."""
        us, reads, nu = ch.unit_start, [], len(ch.unit_start) - 1
        for u in range(nu):
            if dues is not None:
                wait(int(dues[u]))
            a, kind = us[u], self.kinds[ch.kl[us[u]]]
            if kind in ("get", "scan"):
                t0s[u], t1s[u], v = self.read_unit(ch, a, kind, reader, reads, tally)
            else:
                t0s[u], t1s[u], v = self.write_unit(ch, a, us[u + 1], kind, reader, reads)
            if isinstance(v, Failed) and tally.error(v.e):
                nu = u + 1
                break
        if reads and self.s["verify"]:
            qs, s1, s2, found = zip(*reads)
            self.check_reads(ch.cs[np.array(qs, np.intp)], np.array(s1, np.uint32), np.array(s2, np.uint32),
                             list(found), tally)
        return nu

    def fresh(self, reader) -> None:
        """Writers publish a new generation after their commit and before their records' states,
        so a reader that loaded a new state sees a new generation here and takes a new snapshot
        (a reader holding one, as LMDB's read transaction, must see every committed write)."""
        gen = self.gen
        if getattr(reader, "seen", -1) != gen:
            reader.refresh()
            reader.seen = gen

    def read_unit(self, ch: Chunk, a: int, kind: str, reader, reads: list, tally: Tally):
        """A get or a scan among writes; a get notes its record's state before and after it."""
        st, c = self.state.arr, ch.cl[a]
        s1 = st[c]
        self.fresh(reader)
        get, scan, key = reader.get, reader.scan, ch.keys[a]
        t0 = pc()
        try:
            v = get(key) if kind == "get" else list(scan(key, ch.limits[a]))
        except Exception as e:  # noqa: BLE001
            v = Failed(e)
        t1 = pc()
        if kind == "get":
            reads.append((a, s1, st[c], v))
        elif not isinstance(v, Failed):
            self.mixed_scan(ch, a, v, tally)
        return t0, t1, v

    def write_unit(self, ch: Chunk, a: int, b: int, kind: str, reader, reads: list):
        """A batch of writes, or an rmw: the get and the write of the next version, timed together."""
        batch, new, old = self.claim(ch, a, b, kind)
        if kind == "rmw":
            self.fresh(reader)
        get, write, key = reader.get, self.w.engine.write, ch.keys[a]
        t0 = pc()
        try:
            v = get(key) if kind == "rmw" else None
            write(batch)
        except Exception as e:  # noqa: BLE001
            v = Failed(e)
        t1 = pc()
        self.gen = next(self.generations)
        for c, s in (old if isinstance(v, Failed) else new).items():
            self.state.arr[c] = s
        if kind == "rmw" and not isinstance(v, Failed):
            reads.append((a, old[ch.cl[a]], old[ch.cl[a]], v))
        return t0, t1, v

    def claim(self, ch: Chunk, a: int, b: int, kind: str):
        """Lock the unit's records when several threads write, and build its batch with the
        versions their states ask for: the chunk's prediction unless another thread wrote."""
        st = self.state.arr
        cs = ch.cl[a:b]
        if self.T > 1:
            self.state.lock(cs)
        old = {c: st[c] & ~LOCK for c in cs}
        cur, batch = dict(old), []
        for q in range(a, b):
            c = ch.cl[q]
            w = cur[c] >> 1
            if kind == "delete":
                batch.append((ch.keys[q], None))
                cur[c] = w << 1
            else:
                v = ch.vals[q] if ch.pred[q] == w else self.dataset.values(u64(c), u64(w))[0]
                batch.append((ch.keys[q], v))
                cur[c] = ((w + 1) << 1) | 1
        return batch, cur, old

    def mixed_scan(self, ch: Chunk, q: int, items: list, tally: Tally) -> None:
        """A scan among writes: exact on one thread; with several writers only the key order is
        checked (docs/decisions.md, "Python worker: scans among concurrent writes")."""
        tally.ops += len(items) - 1
        if not self.s["verify"]:
            return
        if self.T == 1:
            self.score_scan(items, self.expect_scan(int(ch.pos[q]), ch.limits[q]), tally)
        else:
            tally.mismatches += sum(1 for x, y in zip(items, items[1:]) if y[0] < x[0])


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
        self.engine, self.mode = None, "read-write"

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
        self.engine, self.mode = self.desc.open(self.args(s["mode"])), s["mode"]
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
        reopen = s["open_per_op"] and self.engine is not None
        if reopen:  # one process cannot always hold two handles of one database
            self.close(s, r)
        elif self.engine is None and not s["open_per_op"]:
            raise RuntimeError("ops step before any open step")
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
            if reopen:
                self.engine = self.desc.open(self.args(self.mode))
        r.update(wall_ns=t.end - t.start, ops=t.ops, requests=t.requests, errors=t.errors, mismatches=t.mismatches,
                 missing=t.missing, busy_ns=t.busy, busy_max_ns=t.busy_max,
                 hist={k: hist.encode(h) for k, h in sorted((t.hist or {s["kind"]: hist.new()}).items())},
                 intervals=[self.interval(t, i) for i in range(max(t.intervals, default=-1) + 1)])
        if t.first_error:
            r.update(first_error=t.first_error, error_kind=t.first_kind)
        if t.unsupported:
            r.update(error=t.unsupported, error_kind="unsupported")


    def interval(self, t: Tally, i: int) -> dict:
        """Interval i of the timeline (empty when no call ended in it)."""
        n, h = t.intervals.get(i, (0, hist.new()))
        return {"t_ms": i * self.job["interval_ms"], "ops": n, "hdr": hist.encode(h)}


def calibrate(n: int = 20_000) -> float:
    """What the timed loop costs per operation around a call that does nothing."""
    t0s, t1s, out = [0] * n, [0] * n, [None] * n
    start = pc()
    timed(bool, [0] * n, out, t0s, t1s, 0, None)
    return (pc() - start) / n
