"""Options arrive resolved by kvbench (crates/kvbench-model/src/options.rs): the worker
only reads them, and every spec it declares must be one kvbench can resolve."""

from conftest import declared_default
from kvbench_driver.engine import CAPABILITIES, Options
from kvbench_driver.engines import all_descriptors


def test_typed_access_to_resolved_options():
    o = Options({"cache": 8 << 20, "limit": None, "raw": True, "compression": "snappy", "path": None})
    assert (o.int("cache"), o.int("limit"), o.int("raw"), o.int("missing")) == (8 << 20, None, None, None)
    assert (o.bool("raw"), o.bool("missing"), o.text("compression"), o.text("path")) == (True, False, "snappy", None)
    assert o.text("cache") == "8388608"
    assert o.effective() == {"cache": 8 << 20, "compression": "snappy", "raw": True}


def test_declared_defaults_are_of_their_kind():
    for d in all_descriptors():
        for s in d.options:
            assert s.kind in ("bool", "int", "enum", "text"), (d.name, s)
            v = declared_default(s)
            assert s.kind != "enum" or v in s.choices, (d.name, s)


def test_capability_names_follow_rust_order():
    for d in all_descriptors():
        assert list(d.capabilities) == [c for c in CAPABILITIES if c in d.capabilities], d.name
