"""What a timed open costs beyond the store's own open: article 000 opens the database for every
read, so anything kvbench's adapter adds to an open lands in the article's read figure."""

import importlib.metadata

import pytest

from conftest import descriptor_or_skip, resolved
from kvbench_driver.engine import OpenArgs


@pytest.mark.parametrize("name", ["py-rocksdict", "py-speedict", "py-lmdb"])
def test_reopening_reads_no_package_metadata(name, tmp_path, monkeypatch):
    desc = descriptor_or_skip(name)
    args = OpenArgs(dir=str(tmp_path), options=resolved(desc, {}), sync="none", mode="read-write")
    first = desc.open(args)  # the first open and its settings may look the binding's version up once
    first.settings()
    first.close()
    looked_up = []
    real = importlib.metadata.version
    monkeypatch.setattr(importlib.metadata, "version", lambda d: looked_up.append(d) or real(d))
    for _ in range(3):
        e = desc.open(args)
        assert e.settings()
        e.close()
    assert looked_up == [], f"each open scanned the installed packages for {looked_up}"
