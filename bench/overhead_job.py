"""The two jobs of a worker-overhead benchmark (bench/java-overhead.sh, bench/node-overhead.sh,
drivers/go/bench/run.sh): `load` writes RECORDS records of 100 bytes (16-digit decimal keys) in
random order, `get` reads COUNT uniformly drawn ones, every read verified unless --no-verify.
Both are protocol jobs (docs/protocol.md) a worker runs with `--job FILE`, so the worker's own
loop is measured beside a minimal program in its language over the same store.

usage: overhead_job.py FILE load|get --engine NAME --dir DIR --records N --count N
       [--options JSON] [--no-verify] [--interval-ms MS]
"""

import argparse
import json

PROTOCOL = 4  # kvbench_model::job::PROTOCOL_VERSION


def dataset(records):
    return {
        "generator": "synthetic",
        "key": {"kind": "decimal", "width": 16},
        "value": {"min": 100, "max": 100, "content": "printable"},
        "loaded": records,
        "total": records,
        "ordered": True,
        "pool_seed": 1,
        "value_seed": 2,
        "open_records": records,
        "open_bytes": records * 130,
    }


def steps(which, records, count, verify):
    def ops(name, kind, n, **kw):
        return dict(step="ops", index=1, name=name, kind=kind, count=n, rec_seed=7, **kw)

    if which == "load":
        timed = ops("load", "load", records, dist={"name": "shuffle", "n": records}, perm_seed=3, batch=1000)
        mode = "read-write"
    else:
        timed = ops("get", "get", count, dist={"name": "uniform", "n": records}, verify=verify)
        mode = "read-only"
    return [{"step": "open", "index": 0, "mode": mode}, timed, {"step": "close", "index": 2}]


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("file")
    p.add_argument("which", choices=["load", "get"])
    p.add_argument("--engine", required=True)
    p.add_argument("--dir", required=True)
    p.add_argument("--records", type=int, required=True)
    p.add_argument("--count", type=int, required=True)
    p.add_argument("--options", default="{}", help="the engine's options, a JSON object")
    p.add_argument("--no-verify", dest="verify", action="store_false")
    p.add_argument("--interval-ms", type=int, default=1000)
    a = p.parse_args()
    job = {
        "protocol": PROTOCOL,
        "engine": a.engine,
        "label": a.engine,
        "options": json.loads(a.options),
        "dir": a.dir,
        "sync": "none",
        "dataset": dataset(a.records),
        "steps": steps(a.which, a.records, a.count, a.verify),
        "progress_ms": a.interval_ms,
        "interval_ms": a.interval_ms,
    }
    with open(a.file, "w") as f:
        json.dump(job, f)


if __name__ == "__main__":
    main()
