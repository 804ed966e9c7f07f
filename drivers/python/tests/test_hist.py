"""Samples counted in bulk with numpy land where HdrHistogram.record_value puts them."""

import numpy as np
from hdrh.histogram import HdrHistogram

from kvbench_driver import hist


def test_bulk_counts_match_record_value():
    rng = np.random.default_rng(7)
    ns = np.concatenate([rng.integers(0, 5000, 2000), rng.integers(0, 10 ** 13, 2000),
                         np.array([0, 1, 2047, 2048, 4095, 4096, hist.MAX_NS, hist.MAX_NS + 1]),
                         [(1 << k) + d for k in range(12, 42) for d in (-1, 0, 1)]])  # each bucket's edges
    counts = hist.new()
    hist.add(counts, hist.index(ns))
    ref = HdrHistogram(1, hist.MAX_NS, 3)
    for v in ns.tolist():
        ref.record_value(min(max(v, 1), hist.MAX_NS))
    assert counts.tolist() == [ref.counts[i] for i in range(ref.counts_len)]
    decoded = HdrHistogram.decode(hist.encode(counts).encode())
    assert decoded.get_total_count() == len(ns) and decoded.get_max_value() == ref.get_max_value()


def test_encoding_is_the_one_record_value_makes():
    rng = np.random.default_rng(8)
    for ns in (rng.integers(300, 90_000, 5000), np.array([hist.MAX_NS, 1, 1]), np.array([], np.int64)):
        counts = hist.new()
        hist.add(counts, hist.index(ns))
        ref = HdrHistogram(1, hist.MAX_NS, 3)
        for i in np.flatnonzero(counts).tolist():
            ref.record_value(ref.get_value_from_index(i), int(counts[i]))
        want = ref.encode()
        assert hist.encode(counts) == (want.decode("ascii") if isinstance(want, bytes) else want)
