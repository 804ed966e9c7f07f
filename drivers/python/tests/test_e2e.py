"""End to end: `python -m kvbench_driver --job` over the tiny plan, for every engine, with every
phase ok (or N/A where the engine lacks the capability) and zero mismatches."""

import json

import pytest

from conftest import descriptor_or_skip, events_of, run_worker, tiny_job
from kvbench_driver.engines import names
from kvbench_driver.protocol import validate_event


def run_job(tmp_path, job) -> tuple[int, list, str]:
    (tmp_path / "job.json").write_text(json.dumps(job))
    out = run_worker("--job", str(tmp_path / "job.json"))
    events = events_of(out.stdout)
    for ev in events:
        assert validate_event(ev) == [], ev
    return out.returncode, events, out.stderr


@pytest.mark.parametrize("name", names())
def test_every_phase_of_the_tiny_plan(name, tmp_path):
    desc = descriptor_or_skip(name)
    caps = desc.capabilities
    db = tmp_path / "db"
    db.mkdir()
    rc, events, stderr = run_job(tmp_path, tiny_job(name, db))
    assert rc == 0, stderr
    assert events[0]["event"] == "hello" and events[-1] == {"event": "done"}
    hello = events[0]
    assert hello["engine"] == name and hello["capabilities"] == caps.names()
    assert hello["worker"].startswith("python kvbench_driver ")
    assert 0 < hello["timer_overhead_ns"] < 100_000
    results = [e["result"] for e in events if e["event"] == "phase"]
    assert [r["name"] for r in results] == ["open"] + [p["name"] for p in tiny_job(name, db)["phases"]] + ["close"]
    for r in results:
        if not caps.persistent and r["name"] in ("article-method", "get-seq-cold"):
            assert r["status"] == "n/a", r
            continue
        assert r["status"] == "ok", r
        assert r["mismatches"] == 0 and r["missing"] == 0 and r["errors"] == 0, r
        assert r["latency"]["min_ns"] <= r["latency"]["p50_ns"] <= r["latency"]["max_ns"]
    by = {r["name"]: r for r in results}
    assert by["load"]["ops"] == 40 and by["load"]["unit"] == "batch" and by["load"]["requests"] == 5
    assert by["multi-get"]["ops"] == 20 and by["multi-get"]["requests"] == 5
    assert by["get-latest"]["threads"] == 1
    if caps.persistent:
        assert by["article-method"]["unit"] == "open+op+close"
        assert by["get-seq-cold"]["cache"].startswith("cold: ")
        assert by["scan"]["ops"] == 33


@pytest.mark.parametrize("name, mode", [("py-lmdb", "read-only"), ("py-rocksdict", "secondary"),
                                        ("py-rocksdict", "read-only"), ("py-speedict", "read-only")])
def test_read_phases_in_another_open_mode(name, mode, tmp_path):
    descriptor_or_skip(name)
    db = tmp_path / "db"
    db.mkdir()
    rc, events, stderr = run_job(tmp_path, tiny_job(name, db, open_mode=mode))
    assert rc == 0, stderr
    by = {e["result"]["name"]: e["result"] for e in events if e["event"] == "phase"}
    for n in ("update", "delete", "mixed"):
        assert by[n]["status"] == "n/a" and "writes are not possible" in by[n]["reason"]
    # Without the updates and deletes, reads expecting them find the loaded values: only the
    # phases before the first write can be checked for ok.
    assert by["get"]["status"] == "ok" and by["multi-get"]["status"] == "ok"
    assert any("reopened" in n for n in by["get"]["notes"])


@pytest.mark.parametrize("name, mode", [("py-speedict", "secondary"), ("py-lmdb", "secondary"),
                                        ("py-plyvel", "read-only")])
def test_an_open_mode_the_engine_lacks_is_na_with_the_reason(name, mode, tmp_path):
    descriptor_or_skip(name)
    db = tmp_path / "db"
    db.mkdir()
    job = tiny_job(name, db, open_mode=mode)
    job["phases"] = job["phases"][:2]
    rc, events, stderr = run_job(tmp_path, job)
    assert rc == 0, stderr
    get = [e["result"] for e in events if e["event"] == "phase"][2]
    assert get["status"] == "n/a", get
    assert "unsupported" in get["reason"]
    if name == "py-speedict":
        assert "close" in get["reason"]


def test_unknown_engine_bad_options_and_missing_plan_are_error_events(tmp_path):
    db = tmp_path / "db"
    db.mkdir()
    rc, events, _ = run_job(tmp_path, tiny_job("lmdb", db))
    assert rc == 1 and events[-1]["event"] == "error" and "not a Python engine" in events[-1]["message"]
    rc, events, _ = run_job(tmp_path, tiny_job("py-memory", db, options={"colour": "red"}))
    assert rc == 1 and events == [{"event": "error", "phase": None,
                                   "message": "engine py-memory has no option `colour` (options: none)"}]
    rc, events, _ = run_job(tmp_path, tiny_job("py-lmdb", db, options={"map_size": "lots"}))
    assert rc == 1 and "expected an integer" in events[-1]["message"]
    rc, events, _ = run_job(tmp_path, tiny_job("py-memory", db, plan=str(tmp_path / "absent.kvbplan")))
    assert rc == 1 and "opening plan" in events[-1]["message"]
    (tmp_path / "job.json").write_text("{not json")
    out = run_worker("--job", str(tmp_path / "job.json"))
    assert out.returncode == 1 and "not JSON" in events_of(out.stdout)[0]["message"]


def test_list_prints_every_engine():
    out = run_worker("--list")
    assert out.returncode == 0, out.stderr
    engines = json.loads(out.stdout)
    assert [e["name"] for e in engines] == names()
    for e in engines:
        assert set(e) == {"name", "description", "version", "capabilities", "options", "available", "why"}
        assert e["available"] == (e["why"] == "")
        for o in e["options"]:
            assert {"name", "kind", "default", "doc"} <= set(o)
    speedict = next(e for e in engines if e["name"] == "py-speedict")
    assert "secondary" not in speedict["capabilities"]
    rocks = next(e for e in engines if e["name"] == "py-rocksdict")
    assert {"raw", "compression"} <= {o["name"] for o in rocks["options"]}
