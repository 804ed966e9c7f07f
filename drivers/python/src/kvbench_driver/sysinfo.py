"""Process usage deltas and page-cache eviction (the sources of crates/kvbench-core/src/sys.rs)."""

from __future__ import annotations

import os
import resource


def usage() -> dict:
    ru = resource.getrusage(resource.RUSAGE_SELF)
    io = {}
    try:
        with open("/proc/self/io") as f:
            io = {k.strip(): int(v) for k, _, v in (line.partition(":") for line in f) if v.strip().isdigit()}
    except OSError:
        pass
    return {"cpu_user_ns": round(ru.ru_utime * 1e9), "cpu_sys_ns": round(ru.ru_stime * 1e9),
            "max_rss_kb": int(ru.ru_maxrss), "io_read_bytes": io.get("read_bytes", 0),
            "io_write_bytes": io.get("write_bytes", 0)}


def delta(before: dict) -> dict:
    after = usage()
    return {k: v if k == "max_rss_kb" else max(v - before[k], 0) for k, v in after.items()}


def evict(d: str) -> int:
    """fdatasync and posix_fadvise(DONTNEED) every file below d (no root needed): dirty pages
    cannot be dropped, so they are written back first. Returns the number of files."""
    n = 0
    for root, _, files in os.walk(d):
        for name in files:
            path = os.path.join(root, name)
            if os.path.islink(path) or not os.path.isfile(path):  # a socket or FIFO would block open()
                continue
            fd = os.open(path, os.O_RDONLY)
            try:
                try:
                    os.fdatasync(fd)
                except OSError:
                    pass
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            finally:
                os.close(fd)
            n += 1
    return n
