"""The shared plan vector decodes in Python exactly as crates/kvbench-core/tests/vectors.rs
decoded it into tests/vectors/plan-tiny.json."""

import json
import struct

import pytest

from conftest import PLAN_TINY, VECTORS
from kvbench_driver.plan import (
    DELETE,
    GET,
    HEADER_SIZE,
    NONE,
    OPS,
    PUT,
    SCAN,
    SCAN_EXPECT,
    SECTION_ENTRY_SIZE,
    SECTION_NAMES,
    Plan,
    PlanError,
)


def decode(path) -> dict:
    raw = path.read_bytes()
    with Plan(str(path)) as plan:
        n = plan.records
        sections = [
            {"kind": e.kind, "name": SECTION_NAMES.get(e.kind, "UNKNOWN"), "index": e.index, "offset": e.offset,
             "length": e.length, "count": e.count}
            for e in plan.sections
        ]
        phases = []
        for p in range(plan.phase_count()):
            ops = plan.ops(p)
            phases.append({"phase": p, "ops": [list(ops[i:i + 4]) for i in range(0, len(ops), 4)]})
        scan_expect = []
        for e in plan.sections:
            if e.kind == SCAN_EXPECT:
                ex = plan.scan_expect(e.index)
                scan_expect.append({"phase": e.index, "values": [ex[q] for q in range(plan.unique_records)]})
        return {
            "comment": json.loads((VECTORS / "plan-tiny.json").read_text())["comment"],
            "file_length": len(raw),
            "magic": raw[0:8].hex(),
            "format_version": struct.unpack_from("<I", raw, 8)[0],
            "section_count": len(plan.sections),
            "seed": plan.seed,
            "spec_hash": f"{plan.spec_hash:016x}",
            "records": n,
            "unique_records": plan.unique_records,
            "raw_bytes": plan.raw_bytes,
            "update_values": plan.update_values,
            "none": NONE,
            "sections": sections,
            "record_list": [{"key": plan.key(r).hex(), "value": plan.value(r).hex()} for r in range(n)],
            "updates": [
                {"value_index": n + u, "record": plan.update_record(u), "value": plan.value(n + u).hex()}
                for u in range(plan.update_values)
            ],
            "sorted": [plan.sorted(p) for p in range(plan.unique_records)],
            "phases": phases,
            "scan_expect": scan_expect,
            "spec": json.loads(plan.spec_json()),
        }


def test_tiny_plan_decodes_as_the_rust_decoding():
    want = json.loads((VECTORS / "plan-tiny.json").read_text())
    got = decode(PLAN_TINY)
    for k in want:
        assert got[k] == want[k], f"field {k} differs"
    assert got == want


def test_reads_expect_the_latest_write_and_absence_after_delete():
    """Replay every write into a model and check every read's expectation against it."""
    with Plan(str(PLAN_TINY)) as plan:
        model = {}
        for p in range(plan.phase_count()):
            ops = plan.ops(p)
            for i in range(0, len(ops), 4):
                kind, r, j, aux = ops[i:i + 4]
                k = plan.key(r)
                if kind == PUT:
                    model[k] = plan.value(j)
                elif kind == DELETE:
                    model.pop(k, None)
                elif kind == GET:
                    assert model.get(k) == (None if j == NONE else plan.value(j)), (p, i // 4)
                else:
                    assert kind == SCAN
                    start = plan.key(plan.sorted(r))
                    live = [key for key in sorted(model) if key >= start]
                    assert aux == min(len(live), aux)


def test_sorted_is_key_order_and_ops_sections_are_indexed_by_phase():
    with Plan(str(PLAN_TINY)) as plan:
        keys = [plan.key(plan.sorted(p)) for p in range(plan.unique_records)]
        assert keys == sorted(keys)
        assert [e.index for e in plan.sections if e.kind == OPS] == list(range(plan.phase_count()))
        assert plan.ops(plan.phase_count()) is None


def test_bad_files_are_refused_with_the_reason(tmp_path):
    bad = tmp_path / "bad.kvbplan"
    bad.write_bytes(b"x" * 5000)
    with pytest.raises(PlanError, match="bad magic"):
        Plan(str(bad))
    raw = bytearray(PLAN_TINY.read_bytes())
    struct.pack_into("<I", raw, 8, 99)
    bad.write_bytes(bytes(raw))
    with pytest.raises(PlanError, match="format version 99"):
        Plan(str(bad))
    raw = bytearray(PLAN_TINY.read_bytes())
    # Make the first section run past the end of the file.
    struct.pack_into("<Q", raw, HEADER_SIZE + 16, len(raw))
    bad.write_bytes(bytes(raw))
    with pytest.raises(PlanError, match="past the end"):
        Plan(str(bad))
    with pytest.raises(PlanError, match="opening plan"):
        Plan(str(tmp_path / "absent.kvbplan"))
    assert SECTION_ENTRY_SIZE == 32
