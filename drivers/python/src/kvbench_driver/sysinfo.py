"""What the operating system tells about this process: CPU time, peak memory, storage I/O, and
page-cache eviction (the same sources as crates/kvbench-core/src/sys.rs)."""

from __future__ import annotations

import os
import resource
from typing import NamedTuple


class Usage(NamedTuple):
    user_ns: int
    sys_ns: int
    max_rss_kb: int
    read_bytes: int
    write_bytes: int

    @staticmethod
    def now() -> Usage:
        ru = resource.getrusage(resource.RUSAGE_SELF)
        read_bytes, write_bytes = proc_io()
        return Usage(
            user_ns=round(ru.ru_utime * 1e6) * 1000,
            sys_ns=round(ru.ru_stime * 1e6) * 1000,
            max_rss_kb=int(ru.ru_maxrss),
            read_bytes=read_bytes,
            write_bytes=write_bytes,
        )


def proc_io() -> tuple[int, int]:
    try:
        with open("/proc/self/io") as f:
            text = f.read()
    except OSError:
        return 0, 0
    fields = {}
    for line in text.splitlines():
        name, _, value = line.partition(":")
        try:
            fields[name.strip()] = int(value.strip())
        except ValueError:
            fields[name.strip()] = 0
    return fields.get("read_bytes", 0), fields.get("write_bytes", 0)


def _files(d: str) -> list[str]:
    out = []
    try:
        entries = list(os.scandir(d))
    except OSError:
        return out
    for e in entries:
        if e.is_dir(follow_symlinks=False):
            out.extend(_files(e.path))
        elif e.is_file(follow_symlinks=False):
            out.append(e.path)
    return out


def evict(d: str) -> int:
    """Write back and evict every file below `d` from the page cache with
    posix_fadvise(DONTNEED) (no root needed). Returns how many files were evicted."""
    n = 0
    for p in _files(d):
        fd = os.open(p, os.O_RDONLY)
        try:
            # Dirty pages cannot be dropped: write them back first.
            try:
                os.fsync(fd)
            except OSError:
                pass
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)
        n += 1
    return n
