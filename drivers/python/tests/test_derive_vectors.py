"""tests/vectors/derive.json (written by the Rust side from docs/plan-format.md): every entry
reproduced byte for byte by the numpy derivations, and every thread's op sequence by the
worker's own chunking."""

import json
from types import SimpleNamespace

import numpy as np
import pytest
import xxhash

from conftest import VECTORS
from kvbench_driver import derive as d
from kvbench_driver.runner import Ops, State

V = json.loads((VECTORS / "derive.json").read_text())
u = d.u64


def test_primitives():
    p = V["primitives"]
    assert [int(d.mix64(u(z))[0]) for z, _ in p["mix64"]] == [w for _, w in p["mix64"]]
    assert [int(d.rnd(s, i)[0]) for s, i, _ in p["rnd"]] == [w for *_, w in p["rnd"]]
    assert [int(d.below(u(x), n)[0]) for x, n, _ in p["below"]] == [w for *_, w in p["below"]]
    assert [float(d.unit(u(x))[0]) for x, _ in p["unit"]] == [w for _, w in p["unit"]]
    assert [int(d.fnv(u(x)).view(np.int64)[0]) for x, _ in p["ycsbhash"]] == [w for _, w in p["ycsbhash"]]
    # stream() is kvbench's (it derives the seeds); it is built from mix64 alone.
    assert [int(d.mix64(u(s) ^ d.mix64(u(i)))[0]) for s, i, _ in p["stream"]] == [w for *_, w in p["stream"]]


def dataset(ds: dict) -> d.Dataset:
    return d.Dataset(ds)


def test_pool():
    p = V["pool"]
    ds = dataset({"generator": "synthetic", "key": {"kind": "u32be"}, "value": {"min": 0, "max": p["max"]},
                  "pool_seed": p["pool_seed"], "value_seed": 0, "total": 0})
    assert len(ds.pool) == p["len"] and ds.pool[:64].decode() == p["first64"]
    assert xxhash.xxh3_64_intdigest(ds.pool) == p["xxh3"]


@pytest.mark.parametrize("case", V["keys"], ids=lambda c: f"{c['key']['kind']}-{c['key'].get('width', 0)}")
def test_keys(case):
    ds = dataset({"generator": "synthetic", "key": case["key"], "value": {"min": 0, "max": 0}, "pool_seed": 1,
                  "value_seed": 1, "total": 0})
    assert [k.hex() for k in ds.keys(u(case["records"]))] == case["hex"]
    assert [ds.keys(u([r]))[0].hex() for r in case["records"]] == case["hex"]  # one at a time, too


@pytest.mark.parametrize("case", V["values"], ids=lambda c: f"{c['dataset']['generator']}-{c['dataset']['value']}")
def test_values(case):
    ds = dataset(case["dataset"])
    rs, vs, hexes = zip(*case["values"])
    assert [v.hex() for v in ds.values(u(rs), u(vs))] == list(hexes)
    assert ds.differ(u(rs), u(vs), [bytes.fromhex(h) for h in hexes]) == []


@pytest.mark.parametrize("case", V["perm"], ids=lambda c: str(c["n"]))
def test_perm(case):
    n = case["n"]
    assert d.perm(n, u(case["key"]), np.arange(len(case["first"]), dtype=np.uint64)).tolist() == case["first"]
    if "xxh3" in case:
        every = d.perm(n, u(case["key"]), np.arange(n, dtype=np.uint64))
        assert sorted(every.tolist()) == list(range(n))
        assert xxhash.xxh3_64_intdigest(every.astype("<u8").tobytes()) == case["xxh3"]


def test_zipfian_draws():
    z = V["zipfian"]
    dist, draws = z["dist"], z["draws"]
    x = u([row[0] for row in draws])
    got = d.zipf(d.unit(x), dist["items"], dist["zetan"], dist["eta"], dist["theta"], dist["alpha"])
    assert got.tolist() == [row[1] for row in draws]
    assert (d.fnv(got) % u(dist["n"])).tolist() == [row[2] for row in draws]


def test_latest_draws():
    z = V["latest"]
    dist, draws = z["dist"], z["draws"]
    stream = d.Stream({"kind": "get", "dist": dist, "rec_seed": 0, "last": dist["count"]})
    last = u([row[1] for row in draws])
    zetan, eta = stream.latest_zeta(last)
    assert zetan.tolist() == [row[3] for row in draws]
    recs = last - d.zipf(d.unit(u([row[0] for row in draws])), last, zetan, eta, dist["theta"], dist["alpha"])
    assert recs.tolist() == [row[2] for row in draws]


def test_load_order_replays_pass_0_of_shuffle_on_every_pass():
    step = {"kind": "get", "dist": {"name": "shuffle", "n": 10}, "rec_seed": 1, "perm_seed": 9}
    k, ib = np.arange(30, dtype=np.uint64), np.zeros(30, np.uint64)
    shuffle = d.Stream(step).records(k, ib).tolist()
    load_order = d.Stream(dict(step, dist={"name": "load-order", "n": 10})).records(k, ib).tolist()
    assert load_order == shuffle[:10] * 3 and shuffle[10:20] != shuffle[:10]


def thread_ops(ds: dict, step: dict, threads: int) -> list:
    """The ops each thread runs, as [k, kind, record] or [k, "scan", position, length or None]."""
    worker = SimpleNamespace(dataset=d.Dataset(ds), state=State(ds), job={"interval_ms": 1000, "dataset": ds})
    ops = Ops(worker, dict(step, threads=threads))
    if ops.writes:
        ops.state.materialize()
    out = []
    for t in range(threads):
        mine = []
        for ch in ops.chunks(t):
            for q, (k, ki, r) in enumerate(zip(ch.ks.tolist(), ch.ki.tolist(), ch.pos.tolist())):
                kind = ops.kinds[ki]
                if kind == "scan":
                    mine.append([k, kind, r, ch.limits[q] if step["scan"]["max"] else None])
                else:
                    mine.append([k, kind, r])
        out.append(mine)
    return out


@pytest.mark.parametrize("case", V["ops"], ids=lambda c: c["step"]["name"])
def test_op_streams(case):
    for run in case["runs"]:
        assert thread_ops(case["dataset"], case["step"], run["threads"]) == run["per_thread"], run["threads"]
