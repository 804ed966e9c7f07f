"""Protocol vectors: every job example parses, every event example (from the Rust worker and from
this worker) validates, and every latency histogram decodes to the summary printed beside it."""

import json
import os

import pytest

from conftest import VECTORS, events_of, run_worker, tiny_job
from kvbench_driver import hist
from kvbench_driver.protocol import JobError, parse_job, validate_event

PROTOCOL = VECTORS / "protocol"


def lines(name):
    out = []
    for no, line in enumerate((PROTOCOL / name).read_text().splitlines(), 1):
        if line.strip():
            out.append((f"{name}:{no}", json.loads(line)))
    return out


def event_files():
    return sorted(p.name for p in PROTOCOL.glob("events-*.jsonl"))


def test_job_vectors_parse():
    jobs = [parse_job(obj) for _, obj in lines("jobs.jsonl")]
    assert len(jobs) >= 3
    minimal = jobs[0]
    assert (minimal.open_mode, minimal.progress_ms, minimal.options, minimal.url) == ("read-write", 200, {}, None)
    assert (minimal.phases[0].threads, minimal.phases[0].cache, minimal.phases[0].open_per) == (1, "warm", "phase")
    full = jobs[1]
    assert full.open_mode == "secondary" and full.options == {"raw": True, "compression": "zstd"}
    assert full.phases[1].open_per == "operation" and full.phases[2].cache == "cold"


@pytest.mark.parametrize("bad, message", [
    ({"protocol": 1}, "missing field `engine`"),
    ({"sync": "sometimes"}, "`sync`"),
    ({"open_mode": "readonly"}, "`open_mode`"),
    ({"phases": [{"name": "x", "kind": "read", "plan_phase": 0}]}, "phases[0]"),
    ({"phases": [{"name": "x", "kind": "get", "plan_phase": -1}]}, "plan_phase"),
])
def test_bad_jobs_name_the_field(bad, message):
    good = dict(lines("jobs.jsonl")[0][1])
    job = {**good, **bad} if "protocol" not in bad else bad
    with pytest.raises(JobError) as e:
        parse_job(job)
    assert message in str(e.value)


@pytest.mark.parametrize("name", event_files())
def test_event_vectors_validate(name):
    seen = set()
    for at, ev in lines(name):
        assert validate_event(ev) == [], at
        seen.add(ev["event"])
    assert {"hello", "phase", "done"} <= seen


@pytest.mark.parametrize("name", event_files())
def test_histograms_decode_to_their_summaries(name):
    """Same summary from the same histogram in both runtimes (Rust's summarize semantics)."""
    n = 0
    for at, ev in lines(name):
        if ev["event"] != "phase" or "latency" not in ev["result"]:
            continue
        lat = ev["result"]["latency"]
        h = hist.decode(lat["hdr"])
        assert h.get_total_count() == ev["result"]["requests"], at
        again = hist.summarize(h)
        for k in ("min_ns", "p50_ns", "p90_ns", "p99_ns", "p999_ns", "max_ns"):
            assert again[k] == lat[k], f"{at}: {k}"
        assert again["mean_ns"] == pytest.approx(lat["mean_ns"], rel=1e-12), at
        assert again["stdev_ns"] == pytest.approx(lat["stdev_ns"], rel=1e-9, abs=1e-9), at
        n += 1
    assert n > 0


def test_summary_follows_rust_quantile_rounding():
    h = hist.new_histogram()
    hist.record_samples(h, [10, 20, 30, 40])
    s = hist.summarize(h)
    # ceil(0.5 * 4) = 2nd value: 20 (the Python library's own rounding would give the same here,
    # but not for 0.9 * 4 = 3.6 -> 4th value).
    assert (s["min_ns"], s["p50_ns"], s["p90_ns"], s["max_ns"]) == (10, 20, 40, 40)
    assert s["mean_ns"] == 25.0
    hist.record_samples(h, [0, -5, 10**15])
    s = hist.summarize(h)
    assert s["min_ns"] == 1 and s["max_ns"] >= hist.MAX_NS


def test_python_worker_events_vector(tmp_path):
    """Run the worker over the tiny plan; with UPDATE_VECTORS=all, keep its output as
    tests/vectors/protocol/events-python.jsonl (the Rust vectors test parses it)."""
    job = tiny_job("py-memory", tmp_path / "db")
    (tmp_path / "db").mkdir()
    job_file = tmp_path / "job.json"
    job_file.write_text(json.dumps(job))
    out = run_worker("--job", str(job_file))
    assert out.returncode == 0, out.stderr
    events = events_of(out.stdout)
    for ev in events:
        assert validate_event(ev) == [], ev
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({**job, "protocol": 99}))
    failed = run_worker("--job", str(bad))
    assert failed.returncode == 1
    err = events_of(failed.stdout)
    assert err == [{"event": "error", "phase": None, "message": "job protocol 99 but this worker speaks 1"}]
    if os.environ.get("UPDATE_VECTORS") == "all":
        progress = [e for e in events if e["event"] == "progress"][:3]
        keep = [e for e in events if e["event"] != "progress"]
        keep[2:2] = progress
        text = "".join(json.dumps(e, separators=(",", ":"), ensure_ascii=False) + "\n" for e in keep + err)
        (PROTOCOL / "events-python.jsonl").write_text(text)
