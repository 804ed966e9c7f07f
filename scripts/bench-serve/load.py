"""Load N records (8-digit decimal keys, values of 45..55 printable bytes) into a server that
speaks RocksServer's API (RocksServer itself or `kvbench serve`), with POST /mset batches.

usage: python3 load.py HOST:PORT RECORDS [TOKEN]
"""

import base64
import http.client
import random
import sys

BATCH = 10_000


def main() -> None:
    host, port = sys.argv[1].rsplit(":", 1)
    records = int(sys.argv[2])
    headers = {"Content-Type": "text/plain"}
    if len(sys.argv) > 3 and sys.argv[3]:
        headers["Authorization"] = "Bearer " + sys.argv[3]
    rng = random.Random(42)
    # One pool of random printable bytes; each value is a slice of it (fast, and no two
    # neighbouring values are equal).
    pool = base64.b64encode(rng.randbytes(3 << 20))
    conn = http.client.HTTPConnection(host, int(port), timeout=300)
    for start in range(0, records, BATCH):
        parts = []
        for i in range(start, min(start + BATCH, records)):
            n = rng.randint(45, 55)
            at = rng.randrange(len(pool) - n)
            parts.append(b"%08d\n%d\n%s\n" % (i, n, pool[at : at + n]))
        conn.request("POST", "/mset", body=b"".join(parts), headers=headers)
        reply = conn.getresponse().read()
        if reply != b"OK\n":
            sys.exit(f"/mset of records {start}..: {reply[:200]!r}")
    print(f"loaded {records} records")


if __name__ == "__main__":
    main()
