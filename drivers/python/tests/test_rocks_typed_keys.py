"""`keys = "int"` on py-rocksdict / py-speedict: article 000 wrote `db[i] = data` (an int key, a
str value) in the binding's default mode. The option stores exactly that, reads it back as the
plan's bytes, and is refused where it cannot apply."""

import pytest

from conftest import descriptor_or_skip, resolved
from kvbench_driver.engine import OpenArgs, OptionError, Unsupported


def open_engine(name, path, given, mode="read-write"):
    desc = descriptor_or_skip(name)
    options = resolved(desc, given)
    return desc.open(OpenArgs(dir=str(path), options=options, sync="none", mode=mode, expected_records=10))


@pytest.mark.parametrize("name", ["py-rocksdict", "py-speedict"])
def test_int_keys_store_what_the_article_stored(name, tmp_path):
    docs = {i.to_bytes(4, "big"): ('{"text": "%s"}' % ("é" * i)).encode() for i in range(0, 300, 7)}
    e = open_engine(name, tmp_path, {"keys": "int"})
    e.write(list(docs.items()))
    e.write([((14).to_bytes(4, "big"), None)])
    del docs[(14).to_bytes(4, "big")]
    assert e.settings()["keys"].startswith("int:")
    r = e.reader()
    for k, v in docs.items():
        assert r.get(k) == v
    assert r.get((14).to_bytes(4, "big")) is None
    probe = list(docs)[:5] + [(14).to_bytes(4, "big")]
    assert r.multi_get(probe) == [docs.get(k) for k in probe]
    with pytest.raises(Unsupported):
        list(r.scan(None, 10))
    # What is on disk is the article's: an int key with a str value, not the plan's bytes.
    assert e.db[21] == docs[(21).to_bytes(4, "big")].decode()
    assert e.db.get((21).to_bytes(4, "big")) is None
    r.close()
    e.close()


def test_int_keys_refuse_raw_mode_long_keys_and_binary_values(tmp_path):
    with pytest.raises(OptionError, match="raw = true"):
        open_engine("py-rocksdict", tmp_path / "a", {"keys": "int", "raw": True})
    e = open_engine("py-rocksdict", tmp_path / "b", {"keys": "int"})
    with pytest.raises(ValueError, match="at most 8 bytes"):
        e.write([(b"123456789", b"v")])
    with pytest.raises(ValueError, match="not UTF-8"):
        e.write([(b"\x00\x01", b"\xff\xfe")])
    e.close()
