"""This worker copies none of the ABI's numbers: core.Abi reads them from the library
(kvb_abi_constant), whose table is kvbench-worker's abi.rs, the source kvbench_abi.h is generated
from (crates/kvbench-ffi/tests/header.rs holds the file to it). This test holds the library this
worker loads to the checked-in header, so a stale build fails here, not in a run."""

import re

import pytest

from conftest import REPO
from kvbench_driver import core

HEADER = REPO / "crates" / "kvbench-ffi" / "kvbench_abi.h"
# What the runner reads by name (a constant missing from the library fails here, not in a run).
USED = ("END", "OPEN", "PREPARE", "CLOSE", "EVICTED", "OPS", "SETTLE", "GET", "MULTI_GET", "SCAN", "WRITE", "RMW",
        "OPEN_GET", "WAIT")


def header_constants() -> dict[str, int]:
    text = re.sub(r"/\*.*?\*/", "", HEADER.read_text(), flags=re.S)
    return {m[1].removeprefix("KVB_"): int(m[2]) for m in re.finditer(r"\b(KVB_\w+)\s*=\s*(-?\d+)", text)}


@pytest.fixture(scope="module")
def abi():
    try:
        return core.Abi(core.load())
    except core.MissingLibrary as e:
        pytest.fail(str(e))


def test_the_library_states_the_numbers_of_the_checked_in_header(abi):
    header = header_constants()
    assert header, f"no KVB_ constant found in {HEADER}"
    found = {name: value for name, value in vars(abi).items() if name != "modes"}
    assert found == header, f"the library {core.library_path()} against {HEADER}: rebuild it with `{core.BUILD}`"


def test_the_library_names_every_number_the_runner_uses(abi):
    assert [n for n in USED if not isinstance(getattr(abi, n, None), int)] == []
    assert sorted(abi.modes.values()) == ["read-only", "read-write", "secondary"]


def test_core_outside_is_the_header_uint32_max():
    assert "u = UINT32_MAX" in (REPO / "crates" / "kvbench-ffi" / "kvbench.h").read_text()
    assert core.OUTSIDE == 2**32 - 1


def test_a_library_without_the_core_calls_fails_at_load_naming_the_rebuild(monkeypatch):
    import _ctypes  # a shared object that is not the worker core (where it is not built in)

    if getattr(_ctypes, "__file__", None) is None:
        pytest.skip("_ctypes is built into this interpreter: no other shared object to load")
    monkeypatch.setenv("KVBENCH_FFI_LIB", _ctypes.__file__)
    with pytest.raises(core.MissingLibrary, match="older than this worker, rebuild it with `cargo build"):
        core.load()
