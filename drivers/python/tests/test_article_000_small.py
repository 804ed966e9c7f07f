"""Article 000's scenario at CI size (scenarios/ci/article-000-small.toml), end to end through the
kvbench binary: every Python and native row ok, every read verified, the article's method
reported as open+op+close. Builds the binary with cargo (or takes $KVBENCH_BIN); skipped when
neither is there."""

import json
import os
import shutil
import subprocess
import sys

import pytest

from conftest import REPO


def kvbench_binary():
    """$KVBENCH_BIN, else the debug binary built now with the default engines (quick after
    `cargo test --workspace`); None without cargo."""
    if os.environ.get("KVBENCH_BIN"):
        return os.environ["KVBENCH_BIN"]
    cargo = shutil.which("cargo")
    if cargo is None:
        return None
    build = subprocess.run([cargo, "build", "-q", "-p", "kvbench", "--bin", "kvbench"], cwd=REPO,
                           capture_output=True, text=True, timeout=1800)
    assert build.returncode == 0, build.stderr[-3000:]
    return str(REPO / "target" / "debug" / "kvbench")


def test_article_000_small_runs_end_to_end(tmp_path):
    binary = kvbench_binary()
    if binary is None:
        pytest.skip("no cargo to build the kvbench binary, and no KVBENCH_BIN")
    env = dict(os.environ, KVBENCH_PYTHON=sys.executable)
    out = subprocess.run(
        [binary, "run", str(REPO / "scenarios" / "ci" / "article-000-small.toml"), "--no-progress",
         "--out", str(tmp_path / "results"), "--data-dir", str(tmp_path / "data"),
         "--plan-dir", str(tmp_path / "plans")],
        capture_output=True, text=True, timeout=1200, env=env, cwd=tmp_path,
    )
    if "this worker speaks protocol" in out.stdout + out.stderr:
        pytest.skip("this kvbench binary writes jobs of another protocol version than this worker's (rebuild it)")
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    # latest.json points at the result file: not a second result.
    [result_file] = [f for f in (tmp_path / "results").glob("*.json") if f.name != "latest.json"]
    result = json.loads(result_file.read_text())
    rows = {e["label"]: e for e in result["engines"]}
    assert "py-speedict (secondary)" not in rows
    for label in ("py-lmdb", "py-rocksdict", "py-rocksdict (raw)", "py-rocksdict (zstd)", "py-rocksdict (read-only)",
                  "py-rocksdict (secondary)", "py-speedict", "py-speedict (raw)", "py-speedict (zstd)",
                  "py-speedict (read-only)", "lmdb", "rocksdb"):
        row = rows[label]
        assert row["status"] == "ok", (label, row.get("error"))
        assert row["runtime"] == ("rust" if label in ("lmdb", "rocksdb") else "python"), label
        assert row["space_bytes"] > 0, label
        phases = {p["name"]: p for p in row["phases"]}
        assert set(phases) == {"open", "load", "article-method", "hot-key-open-once", "get-1000", "get-all", "close"}
        for p in row["phases"]:
            assert p["status"] == "ok" and p["mismatches"] == 0 and p["missing"] == 0, (label, p)
        assert phases["article-method"]["unit"] == "open+op+close"
        assert phases["load"]["ops"] == 3000 and phases["get-all"]["ops"] == 3000
    assert rows["py-rocksdict (secondary)"]["open_mode"] in ("secondary", "Secondary")
    assert rows["py-rocksdict (raw)"]["options"]["raw"] is True
