"""Executes a job: opens the engine, runs each phase of the plan, times every operation, checks
every read against the plan and emits protocol events. It follows the Rust runner
(crates/kvbench-core/src/runner.rs) phase for phase; docs/protocol.md states where it differs.

How a timed loop is built, so that Python's own costs stay out of the numbers:
- operations run in chunks of CHUNK; before a chunk, its keys and values are sliced out of the
  plan into bytes objects (the objects a Python user would hold);
- inside the chunk each operation is `t0 = perf_counter_ns(); call; t1 = perf_counter_ns()` and
  the sample is stored in a preallocated array; what the call returned is kept;
- after the chunk, the returned values are checked against the plan and the samples are recorded
  into the HdrHistogram. Only the chunk loops count in the phase's elapsed time.
Garbage collection is off inside the loops (the loops allocate only what the binding returns).
"""

from __future__ import annotations

import gc
import platform
import time
from array import array
from typing import Any, Callable, Optional

from . import __version__, hist
from .engine import (
    OPEN_MODE_DEBUG,
    Descriptor,
    Engine,
    OpenArgs,
    Options,
    Unsupported,
    describe_error,
)
from .plan import DELETE, GET, NONE, PUT, SCAN, Plan, PlanError
from .protocol import (
    PROTOCOL_VERSION,
    Job,
    JobPhase,
    done,
    error,
    hello,
    phase_event,
    phase_result,
    progress,
)
from .sysinfo import Usage, evict

# A phase stops after this many engine errors.
MAX_ERRORS = 1000
# Operations per timed chunk (keys and values of a chunk are built before it runs).
CHUNK = 16384

pc = time.perf_counter_ns
Emit = Callable[[dict[str, Any]], None]


def worker_name() -> str:
    return f"python kvbench_driver {__version__} ({platform.python_implementation()} {platform.python_version()})"


class Tally:
    """What a phase measured."""

    def __init__(self) -> None:
        self.hist = hist.new_histogram()
        self.ops = 0
        self.requests = 0
        self.errors = 0
        self.mismatches = 0
        self.missing = 0
        self.first_error: Optional[str] = None
        self.unsupported: Optional[str] = None
        self.loop_ns = 0
        self.pending = array("q")

    def error(self, e: BaseException) -> bool:
        """Count an error; True when the phase must stop."""
        if isinstance(e, Unsupported):
            self.unsupported = e.what
            return True
        self.errors += 1
        if self.first_error is None:
            self.first_error = describe_error(e)
        return self.errors >= MAX_ERRORS

    def record(self, samples) -> None:
        hist.record_samples(self.hist, samples)

    def add(self, ns: int) -> None:
        """One sample of a loop that times operations one at a time (recorded later)."""
        self.pending.append(ns)
        if len(self.pending) >= CHUNK:
            self.flush()

    def flush(self) -> None:
        if self.pending:
            hist.record_samples(self.hist, self.pending)
            self.pending = array("q")

    def check(self, plan: Plan, expected: int, found: Optional[bytes]) -> None:
        if expected == NONE:
            if found is not None:
                self.mismatches += 1
        elif found is None:
            self.missing += 1
        elif plan.value_view(expected) != found:
            self.mismatches += 1


class _Failed(Exception):
    """An operation's exception, kept in place of its result."""

    def __init__(self, e: BaseException):
        self.e = e


def _timed_calls(fn, args: list, samples: array, found: list) -> int:
    """Call fn(a) for each a, timing each call into samples[i] and keeping what it returned (or
    raised) in found[i]. Returns the time of the whole loop. hist.calibrate measures this loop's
    own cost; keep the two in step."""
    pc = time.perf_counter_ns
    i = 0
    start = pc()
    for a in args:
        t0 = pc()
        try:
            v = fn(a)
        except Exception as e:  # noqa: BLE001
            v = _Failed(e)
        t1 = pc()
        samples[i] = t1 - t0
        found[i] = v
        i += 1
    return pc() - start


class Runner:
    def __init__(self, job: Job, desc: Descriptor, plan: Plan, options: Options, emit: Emit):
        self.job = job
        self.desc = desc
        self.plan = plan
        self.options = options
        self.emit = emit
        self.engine: Optional[Engine] = None
        self.mode = "read-write"
        self._last_progress = 0

    # -- opening and closing --

    def args(self, mode: str) -> OpenArgs:
        return OpenArgs(
            dir=self.job.dir,
            options=self.options,
            sync=self.job.sync,
            mode=mode,
            expected_records=self.plan.records,
            expected_bytes=self.plan.raw_bytes + self.plan.update_values * 2 * 1024,
            url=self.job.url,
        )

    def open(self, mode: str) -> None:
        self.engine = self.desc.open(self.args(mode))
        self.mode = mode

    def close(self) -> None:
        e, self.engine = self.engine, None
        if e is not None:
            e.close()

    def reopen(self, mode: str, cold: bool) -> tuple[int, int]:
        """Close and open again in `mode`; returns (open time in ns, files evicted)."""
        self.close()
        evicted = evict(self.job.dir) if cold else 0
        t0 = pc()
        self.open(mode)
        return pc() - t0, evicted

    # -- results --

    def single(self, name: str, ns: int, usage0: Usage) -> dict[str, Any]:
        h = hist.new_histogram()
        hist.record_samples(h, [ns])
        r = phase_result(name, name)
        r.update(ops=1, requests=1, unit=name, elapsed_ns=ns, wall_ns=ns, ops_per_sec=1e9 / max(ns, 1),
                 latency=hist.summarize(h), cache="-")
        fill_usage(r, usage0)
        return r

    def maybe_progress(self, ph: JobPhase, done_: int, total: int) -> None:
        now = pc()
        if (now - self._last_progress) // 1_000_000 >= self.job.progress_ms:
            self._last_progress = now
            self.emit(progress(ph.name, done_, total))

    # -- one phase --

    def phase(self, ph: JobPhase) -> dict[str, Any]:
        caps = self.desc.capabilities
        res = phase_result(ph.name, ph.kind)
        res.update(threads=max(ph.threads, 1), batch=max(ph.batch, 1), cache=ph.cache)

        def na(why: str) -> dict[str, Any]:
            res["status"] = "n/a"
            res["reason"] = why
            return res

        ops = self.plan.ops(ph.plan_phase)
        if ops is None:
            res["status"] = "failed"
            res["reason"] = f"plan has no phase {ph.plan_phase}"
            return res
        kinds = set(ops[0::4]) if ph.kind == "mixed" else set()
        k = ph.kind
        if k == "scan" and not caps.ordered_scan:
            return na("engine has no ordered scan")
        if k in ("update", "delete", "mixed") and caps.build_once:
            return na("engine is written once (build-once): no updates or deletes")
        if k == "delete" and not caps.delete:
            return na("engine cannot delete")
        if k == "mixed" and not caps.delete and DELETE in kinds:
            return na("engine cannot delete")
        if k == "mixed" and not caps.ordered_scan and SCAN in kinds:
            return na("engine has no ordered scan")
        if not caps.persistent and ((k == "get" and ph.open_per == "operation") or ph.cache == "cold"):
            return na("engine is not persistent: a reopen would find it empty")
        if k == "multi-get" and not caps.multi_get:
            res["notes"].append("no native multi-get: each request loops over get")
        writes = k in ("load", "update", "delete", "mixed")
        if writes and self.job.open_mode != "read-write" and k != "load":
            return na(f"reads use a {OPEN_MODE_DEBUG[self.job.open_mode]} open; writes are not possible")

        # Open mode and cache state for this phase.
        want = "read-write" if writes else self.job.open_mode
        if want != self.mode or ph.cache == "cold":
            try:
                ns, evicted = self.reopen(want, ph.cache == "cold")
                if ph.cache == "cold":
                    res["cache"] = f"cold: {evicted} files evicted with posix_fadvise(DONTNEED)"
                res["notes"].append(f"reopened {OPEN_MODE_DEBUG[want]} in {ns / 1e6:.3f} ms before the phase")
            except Unsupported as e:
                # The engine cannot open this way at all: N/A, and go on read-write.
                self._recover()
                return na(f"{OPEN_MODE_DEBUG[want]} open: {e}")
            except Exception as e:  # noqa: BLE001 - any binding error fails the phase
                res["status"] = "failed"
                res["reason"] = f"reopen failed: {describe_error(e)}"
                self._recover()
                return res
        if ph.rate is not None:
            res["notes"].append("the Python worker has no open loop yet: this phase ran closed-loop")
        if ph.threads > 1:
            res["notes"].append("the Python worker runs phases on one thread (one interpreter lock)")
            res["threads"] = 1

        usage0 = Usage.now()
        wall0 = pc()
        self._last_progress = pc()
        gc.collect()
        gc.disable()
        try:
            if k == "get" and ph.open_per == "operation":
                res["unit"] = "open+op+close"
                res["notes"].append("each sample opens the database, reads one key and closes it")
                tally = self.open_per_op(ops, ph)
            elif k in ("load", "update", "delete"):
                if ph.batch > 1:
                    res["unit"] = "batch"
                tally = self.writes(ops, ph)
            elif k == "mixed":
                tally = self.mixed(ops, ph)
            else:
                if k != "get":
                    res["unit"] = "request"
                tally = self.reads(ops, ph)
            elapsed = tally.loop_ns
            if k == "load" and tally.errors == 0 and self.engine is not None:
                t = pc()
                try:
                    self.engine.finish_load()
                except Exception as e:  # noqa: BLE001
                    tally.error(e)
                fin = pc() - t
                elapsed += fin
                if fin > 1_000_000:
                    res["notes"].append(f"includes {fin / 1e6:.1f} ms to finish the load")
        finally:
            gc.enable()
        if ph.open_per == "operation" and self.engine is None:
            try:
                self.open(self.mode)
            except Exception as e:  # noqa: BLE001
                tally.error(e)
        tally.flush()
        res["elapsed_ns"] = elapsed
        res["wall_ns"] = pc() - wall0
        fill_usage(res, usage0)
        res.update(ops=tally.ops, requests=tally.requests, errors=tally.errors, mismatches=tally.mismatches,
                   missing=tally.missing, ops_per_sec=tally.ops / max(elapsed / 1e9, 1e-9),
                   latency=hist.summarize(tally.hist))
        if tally.unsupported is not None:
            return na(f"unsupported: {tally.unsupported}")
        if tally.first_error is not None:
            res["status"] = "failed"
            res["reason"] = f"{tally.errors} errors; first: {tally.first_error}"
        elif tally.mismatches + tally.missing > 0:
            res["status"] = "failed"
            res["reason"] = (f"verification failed: {tally.mismatches} wrong values, "
                             f"{tally.missing} missing keys")
        return res

    def _recover(self) -> None:
        """After a failed reopen: open read-write again (untimed) so later phases can run."""
        try:
            self.close()
        except Exception:  # noqa: BLE001
            pass
        try:
            self.open("read-write")
        except Exception:  # noqa: BLE001
            self.engine = None

    # -- loops --

    def writes(self, ops, ph: JobPhase) -> Tally:
        engine = self.engine
        plan = self.plan
        key, value = plan.key, plan.value
        batch = max(ph.batch, 1)
        n = len(ops) // 4
        t = Tally()
        write = engine.write
        per_chunk = max(1, CHUNK // batch)
        i = 0
        stop = False
        while i < n and not stop:
            # Build the batches of this chunk (untimed).
            batches = []
            for _ in range(per_chunk):
                if i >= n:
                    break
                b = []
                for j in range(i, min(i + batch, n)):
                    q = 4 * j
                    v = ops[q + 2]
                    b.append((key(ops[q + 1]), value(v) if ops[q] == PUT else None))
                batches.append(b)
                i += len(b)
            samples = array("q", bytes(8 * len(batches)))
            done_ops = 0
            nb = 0
            failed: list[BaseException] = []
            c0 = pc()
            for b in batches:
                t0 = pc()
                try:
                    write(b)
                except Exception as e:  # noqa: BLE001
                    failed.append(e)
                t1 = pc()
                samples[nb] = t1 - t0
                nb += 1
                done_ops += len(b)
                if failed and (isinstance(failed[-1], Unsupported) or t.errors + len(failed) >= MAX_ERRORS):
                    break
            t.loop_ns += pc() - c0
            t.record(samples[:nb])
            t.requests += nb
            t.ops += done_ops
            for e in failed:
                if t.error(e) or t.unsupported is not None:
                    stop = True
                    break
            self.maybe_progress(ph, min(i, n), n)
        return t

    def reads(self, ops, ph: JobPhase) -> Tally:
        t = Tally()
        try:
            reader = self.engine.reader()
        except Exception as e:  # noqa: BLE001
            t.error(e)
            return t
        try:
            if ph.kind == "get":
                self._get_loop(reader, ops, ph, t)
            elif ph.kind == "multi-get":
                self._multi_get_loop(reader, ops, ph, t)
            else:
                self._scan_loop(reader, ops, ph, t)
        finally:
            try:
                reader.close()
            except Exception as e:  # noqa: BLE001
                t.error(e)
        return t

    def _get_loop(self, reader, ops, ph: JobPhase, t: Tally) -> None:
        plan = self.plan
        key = plan.key
        n = len(ops) // 4
        get = reader.get
        for start in range(0, n, CHUNK):
            end = min(start + CHUNK, n)
            keys = [key(ops[4 * i + 1]) for i in range(start, end)]
            samples = array("q", bytes(8 * len(keys)))
            found: list[Any] = [None] * len(keys)
            t.loop_ns += _timed_calls(get, keys, samples, found)
            t.record(samples)
            t.ops += len(keys)
            t.requests += len(keys)
            stop = False
            for x, v in enumerate(found):
                if isinstance(v, _Failed):
                    if t.error(v.e):
                        stop = True
                        break
                    continue
                t.check(plan, ops[4 * (start + x) + 2], v)
            if stop or t.unsupported is not None:
                return
            self.maybe_progress(ph, end, n)

    def _multi_get_loop(self, reader, ops, ph: JobPhase, t: Tally) -> None:
        plan = self.plan
        key = plan.key
        per = max(ph.keys_per_request, 1)
        n = len(ops) // 4
        requests = n // per
        mget = reader.multi_get
        step = max(1, CHUNK // per)
        for start in range(0, requests, step):
            end = min(start + step, requests)
            reqs = [[key(ops[4 * j + 1]) for j in range(r * per, (r + 1) * per)] for r in range(start, end)]
            samples = array("q", bytes(8 * len(reqs)))
            found: list[Any] = [None] * len(reqs)
            t.loop_ns += _timed_calls(mget, reqs, samples, found)
            t.record(samples)
            t.ops += per * len(reqs)
            t.requests += len(reqs)
            for x, vs in enumerate(found):
                if isinstance(vs, _Failed):
                    if t.error(vs.e) or t.unsupported is not None:
                        return
                    continue
                r = start + x
                if len(vs) != per:
                    t.mismatches += per
                    continue
                for m, j in enumerate(range(r * per, (r + 1) * per)):
                    t.check(plan, ops[4 * j + 2], vs[m])
            self.maybe_progress(ph, end * per, n)

    def _scan_loop(self, reader, ops, ph: JobPhase, t: Tally) -> None:
        """Each scan is one sample. As in the Rust worker, verification walks the expected
        sorted positions beside the engine's cursor, inside the timed scan."""
        plan = self.plan
        unique = plan.unique_records
        expect = plan.scan_expect(ph.plan_phase)
        if expect is None:
            t.error(RuntimeError(f"plan has no scan expectations for phase {ph.plan_phase}"))
            return
        key, sorted_, value_view = plan.key, plan.sorted, plan.value_view
        n = len(ops) // 4
        for i in range(n):
            start_pos, limit = ops[4 * i + 1], ops[4 * i + 3]
            start = key(sorted_(start_pos))
            p = start_pos
            bad = 0
            seen = 0
            failure = None
            t0 = pc()
            try:
                for k, v in reader.scan(start, limit):
                    while p < unique and expect[p] == NONE:
                        p += 1
                    seen += 1
                    if p >= unique:
                        bad += 1
                        break
                    j = expect[p]
                    if k != key(sorted_(p)) or value_view(j) != v:
                        bad += 1
                    p += 1
            except Exception as e:  # noqa: BLE001
                failure = e
            t1 = pc()
            t.loop_ns += t1 - t0
            t.add(t1 - t0)
            t.requests += 1
            t.ops += seen
            if failure is not None:
                if t.error(failure) or t.unsupported is not None:
                    return
                continue
            t.mismatches += bad
            t.missing += max(limit - seen, 0)
            self.maybe_progress(ph, i + 1, n)

    def mixed(self, ops, ph: JobPhase) -> Tally:
        engine = self.engine
        plan = self.plan
        key, value, sorted_ = plan.key, plan.value, plan.sorted
        t = Tally()
        try:
            reader = engine.reader()
        except Exception as e:  # noqa: BLE001
            t.error(e)
            return t
        n = len(ops) // 4
        dirty = False
        write = engine.write
        try:
            for i in range(n):
                q = 4 * i
                kind, r, j, aux = ops[q], ops[q + 1], ops[q + 2], ops[q + 3]
                failure = None
                if kind in (GET, SCAN):
                    if dirty:
                        try:
                            reader.refresh()
                        except Exception as e:  # noqa: BLE001
                            t.error(e)
                        dirty = False
                    if kind == GET:
                        k = key(r)
                        t0 = pc()
                        try:
                            v = reader.get(k)
                        except Exception as e:  # noqa: BLE001
                            failure = e
                        t1 = pc()
                        t.loop_ns += t1 - t0
                        t.add(t1 - t0)
                        if failure is None:
                            t.check(plan, j, v)
                    else:
                        start = key(sorted_(r))
                        disorder = 0
                        prev = b""
                        t0 = pc()
                        try:
                            for k2, _v in reader.scan(start, aux):
                                if k2 < prev:
                                    disorder += 1
                                prev = k2
                        except Exception as e:  # noqa: BLE001
                            failure = e
                        t1 = pc()
                        t.loop_ns += t1 - t0
                        t.add(t1 - t0)
                        t.mismatches += disorder
                else:
                    b = [(key(r), value(j) if kind == PUT else None)]
                    dirty = True
                    t0 = pc()
                    try:
                        write(b)
                    except Exception as e:  # noqa: BLE001
                        failure = e
                    t1 = pc()
                    t.loop_ns += t1 - t0
                    t.add(t1 - t0)
                t.ops += 1
                t.requests += 1
                if failure is not None and (t.error(failure) or t.unsupported is not None):
                    break
                self.maybe_progress(ph, i, n)
        finally:
            try:
                reader.close()
            except Exception as e:  # noqa: BLE001
                t.error(e)
        return t

    def open_per_op(self, ops, ph: JobPhase) -> Tally:
        """The article 000 method: open, read one key, close, for every operation."""
        t = Tally()
        try:
            self.close()
        except Exception as e:  # noqa: BLE001
            t.error(e)
            return t
        plan = self.plan
        n = len(ops) // 4
        args = self.args(self.mode)
        open_ = self.desc.open
        keys = [plan.key(ops[4 * i + 1]) for i in range(n)]
        for i, k in enumerate(keys):
            t0 = pc()
            try:
                e = open_(args)
                rd = e.reader()
                v = rd.get(k)
                rd.close()
                e.close()
                failure = None
            except Exception as ex:  # noqa: BLE001
                failure = ex
            t1 = pc()
            t.loop_ns += t1 - t0
            t.add(t1 - t0)
            t.ops += 1
            t.requests += 1
            if failure is not None:
                if t.error(failure):
                    break
            else:
                t.check(plan, ops[4 * i + 2], v)
            self.maybe_progress(ph, i, n)
        return t


def fill_usage(r: dict[str, Any], before: Usage) -> None:
    after = Usage.now()
    r["cpu_user_ns"] = max(after.user_ns - before.user_ns, 0)
    r["cpu_sys_ns"] = max(after.sys_ns - before.sys_ns, 0)
    r["max_rss_kb"] = after.max_rss_kb
    r["io_read_bytes"] = max(after.read_bytes - before.read_bytes, 0)
    r["io_write_bytes"] = max(after.write_bytes - before.write_bytes, 0)


def run_job(job: Job, desc: Optional[Descriptor], emit: Emit) -> bool:
    """Run `job`, emitting events. Returns False when the job could not go on (the error event
    has then been emitted)."""

    def fail(message: str, phase: Optional[str] = None) -> bool:
        emit(error(message, phase))
        return False

    if job.protocol != PROTOCOL_VERSION:
        return fail(f"job protocol {job.protocol} but this worker speaks {PROTOCOL_VERSION}")
    if desc is None:
        from .engines import names

        return fail(f"engine {job.engine} is not a Python engine (known: {', '.join(names())})")
    why = desc.unavailable()
    if why is not None:
        return fail(f"engine {desc.name} unavailable: {why}")
    try:
        plan = Plan(job.plan)
    except PlanError as e:
        return fail(str(e))
    try:
        return _run(job, desc, plan, emit, fail)
    finally:
        plan.close()


def _run(job: Job, desc: Descriptor, plan: Plan, emit: Emit, fail) -> bool:
    try:
        options = Options.parse(desc.name, desc.options, job.options)
    except ValueError as e:
        return fail(str(e))
    loop_ns, record_ns, floor_ns = hist.calibrate()
    r = Runner(job, desc, plan, options, emit)

    usage0 = Usage.now()
    t0 = pc()
    try:
        r.open("read-write")
    except Exception as e:  # noqa: BLE001
        return fail(f"open failed: {describe_error(e)}", "open")
    open_ns = pc() - t0
    settings = dict(r.engine.settings()) if r.engine is not None else {}
    settings["worker.timing"] = (
        "perf_counter_ns() around each call; samples buffered in the loop and recorded into the "
        "HdrHistogram between chunks, outside the timing; gc disabled in timed loops"
    )
    settings["worker.histogram_record_ns"] = f"{record_ns:.1f}"
    settings["worker.timer_floor_ns"] = str(floor_ns)
    emit(hello(worker_name(), desc.name, desc.version(), desc.capabilities.names(), options.effective(),
               settings, loop_ns))
    emit(phase_event(r.single("open", open_ns, usage0)))

    for ph in job.phases:
        result = r.phase(ph)
        fatal = ph.kind == "load" and result["status"] == "failed"
        emit(phase_event(result))
        if fatal:
            return fail(f"load failed: {result.get('reason') or ''}", ph.name)
        if r.engine is None:
            return fail("engine could not be reopened", ph.name)

    usage0 = Usage.now()
    t0 = pc()
    close_error = None
    try:
        r.close()
    except Exception as e:  # noqa: BLE001
        close_error = describe_error(e)
    close_ns = pc() - t0
    close = r.single("close", close_ns, usage0)
    if close_error is not None:
        close["status"] = "failed"
        close["reason"] = close_error
    emit(phase_event(close))
    emit(done())
    return True
