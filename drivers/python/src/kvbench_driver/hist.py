"""Latency histograms: samples are counted into numpy arrays laid out as HdrHistogram's counts
(1 ns .. 1 h, 3 significant digits), a whole chunk per numpy call, and turned into the standard
V2 compressed encoding of the `hdrhistogram` package once per step."""

from __future__ import annotations

import numpy as np
from hdrh.histogram import HdrHistogram

MAX_NS = 3_600_000_000_000
SUB_BITS = 11  # 2048 sub-buckets: 3 significant digits
LENGTH = HdrHistogram(1, MAX_NS, 3).counts_len


def new() -> np.ndarray:
    return np.zeros(LENGTH, np.int64)


def index(ns: np.ndarray) -> np.ndarray:
    """The counts index of each sample (clamped to 1 ns .. 1 h), as HdrHistogram.record_value's."""
    v = np.clip(ns, 1, MAX_NS).astype(np.int64)
    # The bit length of v | 2047 is the exponent of its float64 (exact below 2**53) + 1: read
    # from the float's bits, it costs two array operations where np.frexp calls libm per sample.
    bucket = ((v | 2047).astype(np.float64).view(np.int64) >> 52) - 1022 - SUB_BITS
    return ((bucket + 1) << (SUB_BITS - 1)) + (v >> bucket) - (1 << (SUB_BITS - 1))


def add(counts: np.ndarray, idx: np.ndarray) -> None:
    """Count samples by their index; unlike bincount, it makes no array of the histogram's length."""
    np.add.at(counts, idx, 1)


def encode(counts: np.ndarray) -> str:
    """The V2 encoding of `counts`. The counts are copied into the histogram's own array at
    once, with the totals record_value would have kept (the encoding reads the counts up to
    the maximum's index): recording each non-zero count cost ~1.4 µs a bucket, several
    milliseconds a histogram, which the step's CPU time included."""
    h = HdrHistogram(1, MAX_NS, 3)
    nz = np.flatnonzero(counts)
    if len(nz):
        np.ctypeslib.as_array(h.counts)[:] = counts
        h.total_count = int(counts.sum())
        h.min_value = h.get_value_from_index(int(nz[0]))
        h.max_value = h.get_value_from_index(int(nz[-1]))
    e = h.encode()
    return e.decode("ascii") if isinstance(e, bytes) else e
