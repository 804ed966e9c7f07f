"""End to end: jobs through `python -m kvbench_driver --job`, every step type and op
kind, asserting the raw counters (every read verified, exact counts of what was done)."""

import base64
import json
import zlib

import pytest
from hdrh.histogram import HdrHistogram

from conftest import VECTORS, descriptor_or_skip, events_of, every_kind, job, ops, run_worker
from kvbench_driver.engines import names


def run_job(tmp_path, j) -> tuple:
    (tmp_path / "job.json").write_text(json.dumps(j))
    out = run_worker("--job", str(tmp_path / "job.json"))
    events = events_of(out.stdout)
    return out.returncode, events, out.stderr


def steps_of(events) -> list:
    return [e for e in events if e["event"] == "step"]


def count(hdr: str) -> int:
    return HdrHistogram.decode(hdr.encode()).get_total_count()


def check_ok(r: dict) -> None:
    assert r["error"] is None, r
    assert (r.get("errors", 0), r.get("mismatches", 0), r.get("missing", 0)) == (0, 0, 0), r


@pytest.mark.parametrize("name", names())
def test_every_step_and_op_kind(name, tmp_path):
    desc = descriptor_or_skip(name)
    db = tmp_path / "db"
    db.mkdir()
    steps = every_kind()
    if "persistent" in desc.capabilities:
        steps += [{"step": "evict"}, {"step": "open", "mode": "read-write"},
                  ops(0, "get", 50, {"name": "uniform", "n": 200}, seed=14), {"step": "close"},
                  ops(0, "get", 20, {"name": "uniform", "n": 200}, seed=15, open_per_op=True)]
    rc, events, stderr = run_job(tmp_path, job(name, db, steps))
    assert rc == 0, stderr
    hello, results = events[0], steps_of(events)
    assert hello["event"] == "hello" and hello["protocol"] == 4 and events[-1] == {"event": "done"}
    assert hello["capabilities"] == list(desc.capabilities) and 0 < hello["timer_overhead_ns"] < 1e6
    assert [r["index"] for r in results] == list(range(len(steps)))
    scans = "scan" in desc.capabilities
    for s, r in zip(steps, results):
        if not scans and s.get("kind") in ("scan", "mixed"):
            # Without an ordered scan the step ends at its first scan, said as unsupported (kvbench
            # marks such phases N/A before they reach a worker); the reads before it are right.
            assert r["error_kind"] == "unsupported" and r["mismatches"] + r["missing"] == 0, r
            continue
        check_ok(r)
        assert r["step"] == s["step"] and r["wall_ns"] > 0 and set(r["usage"]) >= {"cpu_user_ns", "max_rss_kb"}
        if s["step"] != "ops":
            continue
        assert sum(count(h) for h in r["hist"].values()) == r["requests"]
        assert sum(i["ops"] for i in r["intervals"]) == r["ops"] or s["kind"] == "scan" or s["kind"] == "mixed"
        assert sum(count(i["hdr"]) for i in r["intervals"]) == r["requests"]
        assert 0 < r["busy_max_ns"] <= r["busy_ns"]
        if s["kind"] not in ("scan", "mixed"):
            assert r["ops"] == s["count"], (s["name"], r)
        want_kinds = set(s["kinds"]) if s["kind"] == "mixed" else {s["kind"]}
        assert set(r["hist"]) <= want_kinds and (s["kind"] == "mixed" or set(r["hist"]) == want_kinds)
    by = {s["name"]: r for s, r in zip(steps, results) if s["step"] == "ops"}
    assert by["load-2"]["requests"] == 13 and by["multi-get-4"]["requests"] == 50
    assert by["update-6"]["requests"] == 30 and by["insert-7"]["requests"] == 4
    if scans:
        assert set(by["mixed-10"]["hist"]) == {"get", "update", "insert", "scan", "rmw", "delete"}
        assert by["scan-5"]["ops"] > by["scan-5"]["requests"] == 40
    assert results[0]["settings"] and results[-1 if "persistent" not in desc.capabilities else -6]["step"] == "close"
    if "persistent" in desc.capabilities:
        assert results[-5]["evicted"] >= 1


def test_rate_paces_the_units_and_counts_latency_from_their_due_time(tmp_path):
    steps = [{"step": "open", "mode": "read-write"}, ops(0, "load", 200, {"name": "sequential", "n": 200}, batch=50),
             ops(0, "get", 300, {"name": "uniform", "n": 200}, rate=1000.0, threads=2)]
    rc, events, stderr = run_job(tmp_path, job("py-memory", tmp_path, steps))
    assert rc == 0, stderr
    r = steps_of(events)[-1]
    check_ok(r)
    # 300 units due at 1 ms intervals: the last is due at 299 ms.
    assert r["wall_ns"] >= 0.29e9  # no upper bound: a busy machine only makes it later
    assert len(r["intervals"]) >= 6  # interval_ms is 50 in these jobs
    assert r["busy_ns"] < r["wall_ns"]


def test_a_warm_up_step_leaves_the_states_its_step_continues_from(tmp_path):
    """kvbench sends a warm-up as an ops step of its own before the measured one: the measured
    step writes the next versions of what the warm-up wrote, and the reads expect exactly those."""
    steps = [{"step": "open", "mode": "read-write"}, ops(0, "load", 200, {"name": "sequential", "n": 200}, batch=50),
             ops(0, "insert", 20, {"name": "sequential", "n": 300}, insert_base=200),
             ops(0, "insert", 30, {"name": "sequential", "n": 300}, insert_base=200),
             ops(0, "get", 250, {"name": "sequential", "n": 250})]
    rc, events, stderr = run_job(tmp_path, job("py-memory", tmp_path, steps))
    assert rc == 0, stderr
    warm, ins, get = steps_of(events)[2:]
    # The warm-up wrote records 200..219 and the step 200..229: the reads find 200..219 at their
    # second version, 220..229 at their first, 230.. absent.
    assert warm["ops"] == 20 and ins["ops"] == 30 and ins["requests"] == 30 and count(ins["hist"]["insert"]) == 30
    check_ok(get)


@pytest.mark.parametrize("threads", [1, 2])
def test_corrupt_every_makes_exactly_that_many_mismatches(threads, tmp_path):
    steps = [{"step": "open", "mode": "read-write"}, ops(0, "load", 200, {"name": "sequential", "n": 200}, batch=50),
             ops(0, "get", 100, {"name": "uniform", "n": 200}, threads=threads),
             ops(0, "multi-get", 40, {"name": "uniform", "n": 200}, keys_per_request=4),
             ops(0, "mixed", 70, {"name": "uniform", "n": 200}, kinds=["get", "update"],
                 thresholds=[2 ** 63, 2 ** 64 - 1])]
    rc, events, stderr = run_job(tmp_path, job("py-memory", tmp_path, steps, options={"corrupt_every": 7}))
    assert rc == 0, stderr
    get, mget, mixed = steps_of(events)[2:]
    assert get["mismatches"] == 100 // 7 and get["missing"] == 0
    # gets 101..140: 105, 112, 119, 126, 133, 140.
    assert mget["mismatches"] == 6 and mget["missing"] == 0
    gets = count(mixed["hist"]["get"])
    assert mixed["mismatches"] == (140 + gets) // 7 - 140 // 7


def test_a_step_that_fails_with_stop_ends_the_job(tmp_path):
    steps = [{"step": "open", "mode": "secondary", "stop": True}, ops(0, "get", 10, {"name": "uniform", "n": 200})]
    rc, events, stderr = run_job(tmp_path, job("py-lmdb", tmp_path, steps))
    assert rc == 0, stderr
    (r,) = steps_of(events)
    assert r["error_kind"] == "unsupported" and "secondary" in r["error"] and events[-1] == {"event": "done"}


def test_settle_is_unsupported_and_the_job_goes_on(tmp_path):
    steps = [{"step": "open", "mode": "read-write"}, ops(0, "load", 200, {"name": "sequential", "n": 200}, batch=50),
             {"step": "settle"}, ops(0, "get", 200, {"name": "uniform", "n": 200}, seed=3), {"step": "close"}]
    rc, events, stderr = run_job(tmp_path, job("py-memory", tmp_path, steps))
    assert rc == 0, stderr
    results = steps_of(events)
    settle = results[2]
    assert settle["step"] == "settle" and settle["error_kind"] == "unsupported", settle
    assert settle["error"] == "unsupported: this engine has no settle (flush and compact) step"
    check_ok(results[3])
    assert results[3]["ops"] == 200 and events[-1] == {"event": "done"}


def test_ops_without_an_open_engine_are_an_error_of_the_step(tmp_path):
    steps = [{"step": "open", "mode": "secondary"}, ops(0, "get", 10, {"name": "uniform", "n": 200}, threads=2)]
    rc, events, stderr = run_job(tmp_path, job("py-lmdb", tmp_path, steps))
    assert rc == 0, stderr
    r = steps_of(events)[-1]
    assert r["errors"] == 2 and r["requests"] == 0 and r["first_error"] == "no open engine", r


def test_errors_of_the_engine_are_counted(tmp_path):
    descriptor_or_skip("py-lmdb")
    steps = [{"step": "open", "mode": "read-write"}, ops(0, "load", 200, {"name": "sequential", "n": 200}, batch=50),
             {"step": "close"}, {"step": "open", "mode": "read-only"},
             ops(0, "update", 10, {"name": "uniform", "n": 200}, batch=2)]
    rc, events, stderr = run_job(tmp_path, job("py-lmdb", tmp_path, steps))
    assert rc == 0, stderr
    r = steps_of(events)[-1]
    assert r["errors"] == 5 and r["requests"] == 5 and "read-only" in r["first_error"].lower()


@pytest.mark.parametrize("change, message", [
    ({"protocol": 1}, "protocol 1 but this worker speaks 4"),
    ({"engine": "lmdb"}, "engine lmdb is not a Python engine"),
    ({"options": {"corrupt_every": 1.5}}, "job option `corrupt_every` = 1.5: kvbench writes"),
    ({"sync": "sometimes"}, "unknown variant `sometimes`, expected one of `none`, `commit`, `always`"),
    ({"steps": [{"step": "ops", "index": 0}]}, "missing field `name`"),
    ({"steps": [{"step": "open", "index": 0, "mode": "upside-down"}]}, "unknown variant `upside-down`"),
])
def test_bad_jobs_are_error_events_naming_the_file(change, message, tmp_path):
    """The worker core reads and checks the job; the worker checks its engine and options."""
    rc, events, _ = run_job(tmp_path, dict(job("py-memory", tmp_path, []), **change))
    assert rc == 1 and len(events) == 1 and events[0]["event"] == "error", events
    assert message in events[0]["message"] and str(tmp_path / "job.json") in events[0]["message"]


def test_a_missing_plan_is_an_error_event_naming_it(tmp_path):
    rc, events, _ = run_job(tmp_path, dict(job("py-memory", tmp_path, []), plan="/nonexistent/plan.kvbplan"))
    assert rc == 1 and len(events) == 1 and "plan /nonexistent/plan.kvbplan: cannot open" in events[0]["message"]


def test_not_json_is_an_error_event(tmp_path):
    (tmp_path / "job.json").write_text("{not json")
    out = run_worker("--job", str(tmp_path / "job.json"))
    message = events_of(out.stdout)[0]["message"]
    assert out.returncode == 1 and str(tmp_path / "job.json") in message and "line 1 column 2" in message


def test_a_missing_worker_core_is_an_error_event_naming_it_and_its_build(tmp_path):
    (tmp_path / "job.json").write_text(json.dumps(job("py-memory", tmp_path, [])))
    out = run_worker("--job", str(tmp_path / "job.json"), env={"KVBENCH_FFI_LIB": str(tmp_path / "nowhere.so")})
    (event,) = events_of(out.stdout)
    assert out.returncode == 1 and event["event"] == "error", out
    assert str(tmp_path / "nowhere.so") in event["message"]
    assert "cargo build --release -p kvbench-ffi" in event["message"]


def test_list_prints_every_engine():
    out = run_worker("--list")
    assert out.returncode == 0, out.stderr
    engines = json.loads(out.stdout)
    assert [e["name"] for e in engines] == names()
    for e in engines:
        assert set(e) == {"name", "description", "version", "capabilities", "options", "available", "why"}
        assert e["available"] == (e["why"] == "")
    memory = next(e for e in engines if e["name"] == "py-memory")
    assert [o["name"] for o in memory["options"]] == ["corrupt_every"]


def test_histograms_are_standard_v2_compressed(tmp_path):
    steps = [{"step": "open", "mode": "read-write"}, ops(0, "load", 100, {"name": "sequential", "n": 200})]
    rc, events, _ = run_job(tmp_path, job("py-memory", tmp_path, steps))
    raw = base64.b64decode(steps_of(events)[1]["hist"]["load"])
    assert int.from_bytes(raw[:4], "big") == 0x1C849314 and zlib.decompress(raw[8:])


@pytest.mark.parametrize("name", ["py-memory", "py-lmdb"])
def test_writer_threads_on_one_hot_record_verify_clean(name, tmp_path):
    """Four threads read, update, read-modify-write and delete one record: the state's lock and
    the reads' before/after rule leave no false mismatch, and the final values are exact."""
    descriptor_or_skip(name)
    mix = {"kinds": ["get", "update", "rmw", "delete", "insert"],
           "thresholds": [2 ** 62, 2 ** 63, 3 * 2 ** 62, 7 * 2 ** 61, 2 ** 64 - 1]}
    steps = [{"step": "open", "mode": "read-write"}, ops(0, "load", 200, {"name": "sequential", "n": 200}, batch=50),
             ops(0, "mixed", 1500, {"name": "hot", "n": 200, "record": 7}, threads=4, insert_base=200, **mix),
             ops(0, "update", 300, {"name": "hot", "n": 200, "record": 9}, threads=3, batch=3),
             ops(0, "get", 200, {"name": "sequential", "n": 200}), {"step": "close"}]
    rc, events, stderr = run_job(tmp_path, job(name, tmp_path, steps, total=1700))
    assert rc == 0, stderr
    for r in steps_of(events):
        check_ok(r)
    mixed = steps_of(events)[2]
    assert set(mixed["hist"]) == set(mix["kinds"]) and mixed["requests"] == 1500


def test_the_protocol_vector_job_gives_the_rust_workers_counts(tmp_path):
    """tests/vectors/protocol/job-every-step.json on py-memory against events-rust.jsonl (the
    Rust worker on `memory`): the same ops, requests, errors, wrong and missing values and
    samples per op kind, step by step. Records seen by scans beside another writer thread
    depend on timing, so that one count is left out where a step has several threads."""
    vectors = VECTORS / "protocol"
    j = json.loads((vectors / "job-every-step.json").read_text())
    j.update(engine="py-memory", label="py-memory", dir=str(tmp_path))
    rc, events, stderr = run_job(tmp_path, j)
    assert rc == 0, stderr
    rust = [json.loads(line) for line in (vectors / "events-rust.jsonl").read_text().splitlines() if line.strip()]
    ours, theirs = steps_of(events), [e for e in rust if e["event"] == "step"]
    assert len(ours) == len(theirs)
    for step, a, b in zip(j["steps"], theirs, ours):
        keys = ["index", "step", "error", "requests", "errors", "mismatches", "missing", "evicted"]
        if step.get("threads", 1) == 1 or step.get("kind") != "mixed":
            keys.append("ops")
        assert {k: a[k] for k in keys} == {k: b[k] for k in keys}, step.get("name", step["step"])
        samples = [{k: count(h) for k, h in e.get("hist", {}).items()} for e in (a, b)]
        assert samples[0] == samples[1], step.get("name", step["step"])
