"""The conformance suite for Python engines: the same expectations as
crates/kvbench-engines/src/conformance.rs, checked against an in-memory dict oracle."""

import pytest

from conftest import descriptor_or_skip, resolved
from kvbench_driver.engine import OpenArgs, Unsupported
from kvbench_driver.engines import names

ENGINES = names()


def key(i: int) -> bytes:
    # Binary keys with a zero byte inside, in an order that differs from insertion order.
    return b"k\0" + (((i * 2654435761) & 0xFFFFFFFF) % 100_000).to_bytes(4, "big") + i.to_bytes(4, "big")


def value(i: int, version: int) -> bytes:
    n = (i * 37 + version * 11) % 300
    return bytes((j ^ i ^ version) & 0xFF for j in range(n))


def args(d, options, sync="commit", mode="read-write"):
    return OpenArgs(dir=str(d), options=options, sync=sync, mode=mode, expected_records=1000,
                    expected_bytes=1 << 20)


def check_reads(e, oracle: dict, probe: list, caps, where: str) -> None:
    r = e.reader()
    try:
        for k in probe:
            assert r.get(k) == oracle.get(k), f"{where}: get {k!r}"
        got = r.multi_get(list(probe))
        assert got == [oracle.get(k) for k in probe], f"{where}: multi_get"
        if "scan" in caps:
            assert list(r.scan(None, 1 << 62)) == sorted(oracle.items()), f"{where}: full scan"
            mid = sorted(oracle)[len(oracle) // 2]
            want = [k for k in sorted(oracle) if k >= mid][:7]
            assert [k for k, _ in r.scan(mid, 7)] == want, f"{where}: scan of 7 from the middle"
            assert list(r.scan(mid, 0)) == [], f"{where}: scan of 0"
    finally:
        r.close()


@pytest.mark.parametrize("name", ENGINES)
def test_conformance(name, tmp_path):
    desc = descriptor_or_skip(name)
    caps = desc.capabilities
    options = resolved(desc)
    oracle: dict = {}
    probe = [key(i) for i in range(260)]
    d = tmp_path / "db"
    d.mkdir()

    e = desc.open(args(d, options))
    # Load 200 records in batches of 50, and one with an empty value.
    for c in range(0, 200, 50):
        batch = [(key(i), value(i, 0)) for i in range(c, c + 50)]
        e.write(batch)
        oracle.update(batch)
    e.write([(key(200), b"")])
    oracle[key(200)] = b""
    e.finish_load()
    check_reads(e, oracle, probe, caps, "after load")

    if "build-once" not in caps:
        for i in range(0, 200, 3):
            e.write([(key(i), value(i, 1))])
            oracle[key(i)] = value(i, 1)
        if "delete" in caps:
            for i in range(0, 200, 7):
                e.write([(key(i), None)])
                oracle.pop(key(i), None)
            # Deleting an absent key is not an error.
            e.write([(key(9999), None)])
        check_reads(e, oracle, probe, caps, "after overwrite/delete")
        # A reader refreshed after a write sees it.
        r = e.reader()
        e.write([(key(1), b"fresh")])
        oracle[key(1)] = b"fresh"
        r.refresh()
        assert r.get(key(1)) == b"fresh", "a refreshed reader does not see a write made after it was created"
        r.close()
    e.close()

    if "persistent" in caps:
        e = desc.open(args(d, options, sync="none"))
        check_reads(e, oracle, probe, caps, "after reopen")
        e.close()
        for mode, able in (("read-only", "read-only" in caps), ("secondary", "secondary" in caps)):
            if able:
                e = desc.open(args(d, options, sync="none", mode=mode))
                check_reads(e, oracle, probe, caps, mode)
                e.close()
            else:
                with pytest.raises(Unsupported):
                    desc.open(args(d, options, mode=mode)).close()


@pytest.mark.parametrize("name", ENGINES)
def test_every_sync_mode_opens_and_writes(name, tmp_path):
    desc = descriptor_or_skip(name)
    options = resolved(desc)
    for sync in ("none", "commit", "always"):
        d = tmp_path / sync
        d.mkdir()
        e = desc.open(args(d, options, sync=sync))
        e.write([(b"a", b"1"), (b"b", b"2")])
        e.finish_load()
        r = e.reader()
        assert r.get(b"b") == b"2", sync
        r.close()
        assert isinstance(e.settings(), dict)
        e.close()


@pytest.mark.parametrize("name", ["py-rocksdict", "py-speedict"])
@pytest.mark.parametrize("opts", [{"raw": True}, {"compression": "zstd"},
                                  {"compression": "none", "bloom_bits": 10, "block_cache": 8 << 20,
                                   "write_buffer": 4 << 20}])
def test_rocks_variants_round_trip(name, opts, tmp_path):
    """The article's variants (raw mode, zstd) and the table options write and read back."""
    desc = descriptor_or_skip(name)
    options = resolved(desc, opts)
    e = desc.open(args(tmp_path, options))
    e.write([(key(i), value(i, 0)) for i in range(100)])
    e.close()
    e = desc.open(args(tmp_path, options, mode="read-only"))
    r = e.reader()
    assert [r.get(key(i)) for i in range(100)] == [value(i, 0) for i in range(100)]
    r.close()
    e.close()


def test_raw_mode_stores_the_bytes_as_given_and_plain_mode_tags_them(tmp_path):
    desc = descriptor_or_skip("py-rocksdict")
    import rocksdict

    for raw in (False, True):
        d = tmp_path / f"raw{raw}"
        e = desc.open(args(d, resolved(desc, {"raw": raw})))
        e.write([(b"k", b"v")])
        e.close()
        db = rocksdict.Rdict(str(d), options=rocksdict.Options(raw_mode=True))
        stored = list(db.items())
        db.close()
        assert stored == ([(b"k", b"v")] if raw else [(b"\x01k", b"\x01v")])
