"""`transaction = "load"` on py-lmdb: article 000 wrote LMDB in one transaction. The first load
into an empty environment stays uncommitted until finish-load; a reopened environment that
holds records commits per batch again."""

from conftest import descriptor_or_skip, resolved
from kvbench_driver.engine import OpenArgs


def open_engine(path, given):
    desc = descriptor_or_skip("py-lmdb")
    options = resolved(desc, given)
    return desc.open(OpenArgs(dir=str(path), options=options, sync="none", mode="read-write", expected_records=10))


def count(e):
    with e.env.begin() as txn:
        return txn.stat()["entries"]


def test_the_first_load_is_one_transaction_committed_by_finish_load(tmp_path):
    e = open_engine(tmp_path, {"transaction": "load"})
    assert e.settings()["write_batch"].startswith("one write transaction for the whole first load")
    e.write([(i.to_bytes(4, "big"), b"v") for i in range(10)])
    e.write([(i.to_bytes(4, "big"), b"v") for i in range(10, 20)])
    assert count(e) == 0, "nothing is committed before the load's end"
    e.finish_load()
    assert count(e) == 20
    e.close()
    again = open_engine(tmp_path, {"transaction": "load"})
    assert again.settings()["write_batch"].startswith("one write transaction per batch")
    again.write([((99).to_bytes(4, "big"), b"w")])
    assert count(again) == 21, "a store that holds records commits each batch"
    again.close()


def test_a_load_that_never_finished_keeps_nothing(tmp_path):
    e = open_engine(tmp_path, {"transaction": "load"})
    e.write([(b"abcd", b"v")])
    e.close()
    again = open_engine(tmp_path, {})
    assert count(again) == 0
    again.close()
