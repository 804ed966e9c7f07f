"""Send the same RocksServer-API requests to two servers and compare the reply bodies byte for
byte (the reference: RocksServer itself; the other: `kvbench serve`). Both start empty.

usage: python3 compare_replies.py REF_HOST:PORT OTHER_HOST:PORT [OTHER_TOKEN]
"""

import http.client
import sys

REQUESTS = [
    ("POST", "/set", b"key1\n5\nhello"),
    ("GET", "/get?key1", b""),
    ("GET", "/get?absent", b""),
    ("GET", "/get", b""),
    ("POST", "/set", b"nl\n3\na\nb"),
    ("GET", "/get?nl", b""),
    ("POST", "/mset", b"k2\n2\nv2\nk3\n0\n\nk4\n3\nv44\n"),
    ("GET", "/mget?k2&nope&k3&key1", b""),
    ("GET", "/mget?k4", b""),
    ("GET", "/mget", b""),
    ("GET", "/exist?k2", b""),
    ("GET", "/exist?nope", b""),
    ("GET", "/exist", b""),
    ("POST", "/del", b"k2"),
    ("GET", "/get?k2", b""),
    ("POST", "/mdel", b"k3\nk4"),
    ("GET", "/mget?k3&k4&key1", b""),
    ("POST", "/incr", b"n"),
    ("POST", "/incr", b"n\n10"),
    ("POST", "/incr", b"n\n-4"),
    ("GET", "/get?n", b""),
    ("POST", "/set", b"t\n3\nabc"),
    ("POST", "/incr", b"t\n2"),
    ("GET", "/get?t", b""),
    ("GET", "/set", b""),
    ("POST", "/del", b""),
    ("POST", "/mset", b""),
]


def ask(conn, method, path, body, token):
    headers = {"Authorization": "Bearer " + token} if token else {}
    conn.request(method, path, body=body or None, headers=headers)
    r = conn.getresponse()
    return r.status, r.read()


def main() -> None:
    ref = http.client.HTTPConnection(*sys.argv[1].rsplit(":", 1), timeout=10)
    other = http.client.HTTPConnection(*sys.argv[2].rsplit(":", 1), timeout=10)
    token = sys.argv[3] if len(sys.argv) > 3 else ""
    bad = 0
    for method, path, body in REQUESTS:
        a = ask(ref, method, path, body, "")
        b = ask(other, method, path, body, token)
        same = a == b
        bad += not same
        print(
            f"{'same' if same else 'DIFF'} {method} {path} {body!r}: {a!r}"
            + ("" if same else f" vs {b!r}")
        )
    print(f"{len(REQUESTS) - bad} of {len(REQUESTS)} replies identical")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
