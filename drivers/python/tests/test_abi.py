"""core.py copies kvbench.h's numbers for ctypes; the header is held to the Rust source
(crates/kvbench-worker/src/abi.rs) by crates/kvbench-ffi/tests/header.rs. This test holds
core.py to the header, so a number changed in one place fails until every copy follows."""

import re

from conftest import REPO
from kvbench_driver import core

HEADER = REPO / "crates" / "kvbench-ffi" / "kvbench.h"
# Header constants this worker has no use for: it hands every value read back (no KVB_MATCHED).
UNUSED = {"KVB_MATCHED"}
MODE_NAMES = {"KVB_READ_WRITE": "read-write", "KVB_READ_ONLY": "read-only", "KVB_SECONDARY": "secondary"}


def header_constants() -> dict[str, int]:
    text = re.sub(r"/\*.*?\*/", "", HEADER.read_text(), flags=re.S)
    found = {m[1]: int(m[2]) for m in re.finditer(r"\b(KVB_\w+)\s*=\s*(-?\d+)", text)}
    found.update({m[1]: int(m[2]) for m in re.finditer(r"#define\s+(KVB_\w+)\s+\(?(-?\d+)\)?", text)})
    return found


def test_core_constants_equal_the_header():
    header = header_constants()
    assert header, f"no KVB_ constant found in {HEADER}"
    for name, value in header.items():
        if name in UNUSED:
            continue
        if name in MODE_NAMES:
            assert core.MODES[value] == MODE_NAMES[name], f"core.MODES[{value}] against kvbench.h {name}"
        else:
            short = name.removeprefix("KVB_")
            assert getattr(core, short, None) == value, f"core.{short} against kvbench.h {name} = {value}"


def test_core_outside_is_the_header_uint32_max():
    assert "u = UINT32_MAX" in HEADER.read_text()
    assert core.OUTSIDE == 2**32 - 1
