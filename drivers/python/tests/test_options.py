"""Options follow the Rust rules and messages (crates/kvbench-core/src/engine.rs)."""

import pytest

from kvbench_driver.engine import CAPABILITIES, Options, OptionSpec, parse_size
from kvbench_driver.engines import all_descriptors

SPECS = (
    OptionSpec("compression", "enum", "snappy", "", ("none", "snappy", "zstd")),
    OptionSpec("cache", "int", "", ""),
    OptionSpec("raw", "bool", "false", ""),
    OptionSpec("path", "text", "", ""),
)


def test_parse_size():
    assert [parse_size(s) for s in ("123", "64k", "64M", " 1g ", "x", "", "k", "1_000")] == [
        123, 64 << 10, 64 << 20, 1 << 30, None, None, None, None]


def test_effective_options_and_typed_access():
    o = Options("e", SPECS, {"cache": "8m", "raw": True})
    assert o.effective() == {"cache": "8m", "compression": "snappy", "raw": True}
    assert (o.int("cache"), o.bool("raw"), o.text("compression"), o.text("path")) == (8 << 20, True, "snappy", None)


@pytest.mark.parametrize("given, message", [
    ({"colour": 1}, "engine e has no option `colour` (options: compression, cache, raw, path)"),
    ({"compression": "lzma"}, "engine e option `compression` = \"lzma\": expected one of none, snappy, zstd"),
    ({"cache": 1.5}, "engine e option `cache` = 1.5: expected an integer (sizes may say 64m, 1g)"),
    ({"cache": True}, "engine e option `cache` = true: expected an integer (sizes may say 64m, 1g)"),
    ({"raw": "yes"}, "engine e option `raw` = \"yes\": expected true or false"),
    ({"path": 3}, "engine e option `path` = 3: expected a string"),
])
def test_bad_options_are_named(given, message):
    with pytest.raises(ValueError) as e:
        Options("e", SPECS, given)
    assert str(e.value) == message


def test_capability_names_follow_rust_order():
    for d in all_descriptors():
        assert list(d.capabilities) == [c for c in CAPABILITIES if c in d.capabilities], d.name
