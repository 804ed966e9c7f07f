"""Peak memory of `kvbench serve` for small hostile /kv/mget requests: one 4 MiB value named
128 times (a 512 MiB reply without a budget); one absent key named a million times; and
`unread`: 40 connections each asking for the 4 MiB value 15 times (60 MiB) and never reading
(2.4 GB queued without a budget over all connections). Prints the statuses, the bytes received
and the server's peak RSS (VmHWM) before and after.

usage: python3 reply_budget.py KVBENCH big|absent|unread
"""

import os
import socket
import struct
import subprocess
import sys
import tempfile
import time


def framed(b: bytes) -> bytes:
    return struct.pack(">I", len(b)) + b


def post(port: int, path: str, body: bytes) -> tuple[bytes, int]:
    for _ in range(300):
        try:
            s = socket.create_connection(("127.0.0.1", port))
            break
        except OSError:
            time.sleep(0.05)
    head = f"POST {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: {len(body)}\r\n\r\n"
    s.sendall(head.encode() + body)
    first, received = b"", 0
    while chunk := s.recv(1 << 20):
        first = first or chunk
        received += len(chunk)
    return first.split(b"\r\n")[0], received


def peak_mib(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        line = next(x for x in f if x.startswith("VmHWM"))
    return int(line.split()[1]) // 1024


def main() -> None:
    kvbench, case = sys.argv[1], sys.argv[2]
    root = tempfile.mkdtemp() + "/root"
    port = 18000 + os.getpid() % 1000
    cmd = [kvbench, "serve", "--engine", "rocksdb", "--listen", f"127.0.0.1:{port}", "--sync", "none"]
    server = subprocess.Popen([*cmd, "--dir", root, "--option", "compression=none"], stderr=subprocess.DEVNULL)
    post(port, "/kv/put", framed(b"big") + framed(b"v" * (4 << 20)))
    before = peak_mib(server.pid)
    if case == "unread":
        unread(port, server, before)
        return
    keys = framed(b"big") * 128 if case == "big" else framed(b"no") * 1_000_000
    status, received = post(port, "/kv/mget", keys)
    print(f"{case}: {status.decode()}, {received} bytes; peak {before} -> {peak_mib(server.pid)} MiB")
    server.terminate()
    server.wait()


def unread(port: int, server: subprocess.Popen, before: int) -> None:
    """40 connections send their request and never read; then one reads its status line."""
    body = framed(b"big") * 15
    head = f"POST /kv/mget HTTP/1.1\r\nHost: x\r\nContent-Length: {len(body)}\r\n\r\n"
    held = []
    for _ in range(40):
        s = socket.create_connection(("127.0.0.1", port))
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        s.sendall(head.encode() + body)
        held.append(s)
    time.sleep(3)
    peak = peak_mib(server.pid)
    statuses = {}
    for s in held:
        s.settimeout(5)
        try:
            line = s.recv(64).split(b"\r\n")[0].decode()
        except OSError as e:
            line = str(e)
        statuses[line] = statuses.get(line, 0) + 1
    print(f"unread: 40 x 60 MiB asked; statuses {statuses}; peak {before} -> {peak} MiB")
    for s in held:
        s.close()
    server.terminate()
    server.wait()


if __name__ == "__main__":
    main()
