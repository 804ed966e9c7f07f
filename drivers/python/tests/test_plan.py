"""The plan file (docs/plan-format.md, "The plan file"): a stored dataset with a repeated key,
written here by the spec, run end to end; damaged plans are refused with their path."""

import json
import struct

import pytest
import xxhash

from conftest import events_of, job, ops, run_worker
from kvbench_driver.plan import Plan, PlanError

KEYS = [b"b", b"a", b"c", b"a", b"d\x00"]
VALUES = [b"first b", b"old a", b"c", b"new a, the one a read returns", b""]
CANON = [0, 3, 2, 3, 4]
SORTED = [3, 0, 2, 4]


def write_plan(path, damage=None) -> None:
    """A plan file as docs/plan-format.md lays it out; `damage` flips one bit at that offset."""
    kinds = (1, 2, 3, 4, 8)
    data_at = 64 + 32 * len(kinds)  # DATA comes first, right after the table (aligned)
    data, index = b"", b""
    for k, v in zip(KEYS, VALUES):
        index += struct.pack("<QII", data_at + len(data), len(k), len(v))
        data += k + v
    contents = [(data, len(KEYS)), (index, len(KEYS)), (struct.pack("<4I", *SORTED), 4),
                (struct.pack("<5I", *CANON), 5), (b'{"spec": "test"}', 1)]
    table, body = b"", b""
    for kind, (content, count) in zip(kinds, contents):
        body += b"\0" * (-(data_at + len(body)) % 8)
        table += struct.pack("<IIQQQ", kind, 0, data_at + len(body), len(content), count)
        body += content
    header = b"KVBPLAN\0" + struct.pack("<IIQQQQQ", 2, len(kinds), 7, 99, len(KEYS), 4, 50)
    h = xxhash.xxh3_64(header + table)
    for content, _ in contents:
        h.update(content)
    blob = bytearray(header + struct.pack("<Q", h.intdigest()) + table + body)
    if damage is not None:
        blob[damage] ^= 1
    path.write_bytes(bytes(blob))


def stored_job(tmp_path, plan) -> dict:
    steps = [{"step": "open", "mode": "read-write"},
             ops(0, "load", 5, {"name": "sequential", "n": 5}, batch=2),
             ops(0, "get", 50, {"name": "uniform", "n": 5}, seed=2),
             ops(0, "scan", 10, {"name": "uniform", "n": 4}, seed=3, scan={"min": 1, "max": 3}),
             ops(0, "update", 20, {"name": "uniform", "n": 5}, seed=4),
             ops(0, "multi-get", 20, {"name": "uniform", "n": 5}, seed=5, keys_per_request=5),
             ops(0, "scan", 10, {"name": "uniform", "n": 4}, seed=6, scan={"min": 1, "max": 0}),
             {"step": "close"}]
    j = job("py-memory", tmp_path, steps, loaded=5, total=5, plan=str(plan))
    j["dataset"].update(generator="stored", key={"kind": "u32be"}, value={"min": 0, "max": 29}, ordered=False)
    return j


def test_a_stored_dataset_with_a_repeated_key_is_loaded_read_and_scanned(tmp_path):
    plan = tmp_path / "p.kvbplan"
    write_plan(plan)
    p = Plan(str(plan))
    assert p.canon.tolist() == CANON and p.sorted.tolist() == SORTED and p.distinct == 4
    (tmp_path / "job.json").write_text(json.dumps(stored_job(tmp_path, plan)))
    out = run_worker("--job", str(tmp_path / "job.json"))
    assert out.returncode == 0, out.stderr
    steps = [e for e in events_of(out.stdout) if e["event"] == "step"]
    for r in steps:
        assert r["error"] is None and (r.get("errors", 0), r.get("mismatches", 0), r.get("missing", 0)) == (0, 0, 0), r
    assert steps[3]["ops"] > 10 and steps[6]["ops"] >= 10


@pytest.mark.parametrize("damage, message", [(0, "bad magic"), (8, "format 3"), (70, "checksum"), (230, "checksum")])
def test_a_damaged_plan_is_refused_with_its_path(damage, message, tmp_path):
    plan = tmp_path / "p.kvbplan"
    write_plan(plan, damage)
    with pytest.raises(PlanError) as e:
        Plan(str(plan))
    assert str(plan) in str(e.value) and message in str(e.value)
