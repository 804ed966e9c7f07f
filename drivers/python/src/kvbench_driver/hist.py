"""Latency histograms: the standard HdrHistogram (package `hdrhistogram`) with the Rust worker's
bounds (1 ns .. 1 h, 3 significant digits), and a summary computed exactly as the Rust runner's
`summarize` (hdrhistogram crate 7.5 semantics), so that the same samples give the same numbers in
both runtimes.
"""

from __future__ import annotations

import math
import time
from array import array
from collections import Counter
from typing import Any, Iterable, Optional

from hdrh.histogram import HdrHistogram

# Longest latency a histogram holds (1 hour); longer samples saturate.
MAX_NS = 3_600_000_000_000
LOWEST = 1
SIGNIFICANT_DIGITS = 3


def new_histogram() -> HdrHistogram:
    return HdrHistogram(LOWEST, MAX_NS, SIGNIFICANT_DIGITS)


def record_samples(h: HdrHistogram, samples: Iterable[int]) -> None:
    """Record nanosecond samples as the Rust runner does: below 1 counts as 1, above the
    histogram's range saturates. Equal samples are recorded with one call."""
    for v, c in Counter(samples).items():
        if v < 1:
            v = 1
        elif v > MAX_NS:
            v = MAX_NS
        h.record_value(v, c)


def encode(h: HdrHistogram) -> str:
    """HdrHistogram V2 compressed encoding, base64 (what every HdrHistogram library decodes)."""
    e = h.encode()
    return e.decode("ascii") if isinstance(e, bytes) else e


def decode(s: str) -> HdrHistogram:
    return HdrHistogram.decode(s.strip().encode("ascii"))


def _median_equivalent(h: HdrHistogram, v: int) -> int:
    return h.get_lowest_equivalent_value(v) + (h._hdr_size_of_equiv_value_range(v) >> 1)


def summarize(h: HdrHistogram) -> Optional[dict[str, Any]]:
    """The `latency` object of a phase result; None for an empty histogram."""
    total = h.get_total_count()
    if total == 0:
        return None
    counts = h.counts
    nonzero = [(i, counts[i]) for i in range(h.counts_len) if counts[i]]
    value_of = h.get_value_from_index
    highest = h.get_highest_equivalent_value

    def quantile(q: float) -> int:
        target = math.ceil(q * float(total))
        if target == 0:
            target = 1
        acc = 0
        for i, c in nonzero:
            acc += c
            if acc >= target:
                return highest(value_of(i))
        return 0

    first, last = nonzero[0][0], nonzero[-1][0]
    min_ns = 0 if first == 0 else h.get_lowest_equivalent_value(value_of(first))
    max_ns = highest(value_of(last))
    ftotal = float(total)
    mean = 0.0
    for i, c in nonzero:
        mean = mean + float(_median_equivalent(h, value_of(i))) * float(c) / ftotal
    dev_total = 0.0
    for i, c in nonzero:
        dev = float(_median_equivalent(h, value_of(i))) - mean
        dev_total = dev_total + (dev * dev) * float(c)
    return {
        "min_ns": min_ns,
        "mean_ns": mean,
        "p50_ns": quantile(0.50),
        "p90_ns": quantile(0.90),
        "p99_ns": quantile(0.99),
        "p999_ns": quantile(0.999),
        "max_ns": max_ns,
        "stdev_ns": math.sqrt(dev_total / ftotal),
        "hdr": encode(h),
    }


def calibrate(n: int = 200_000) -> tuple[float, float, int]:
    """(loop cost, histogram cost, timer floor) in ns.

    The loop cost is what the timed loops add per operation: two perf_counter_ns() calls, the
    subtraction, the store of the sample and of the result, and the loop itself, measured with no
    operation between the clock reads (the counterpart of the Rust runner's `calibrate_timer`).
    The histogram cost is recording those samples into the HdrHistogram afterwards, which the
    runner does between chunks, outside every timing. The timer floor is the median of the
    back-to-back samples: what every latency sample holds beyond the operation itself.
    """
    pc = time.perf_counter_ns
    samples = array("q", bytes(8 * n))
    found: list = [None] * n
    i = 0
    start = pc()
    for _ in range(n):
        t0 = pc()
        t1 = pc()
        samples[i] = t1 - t0
        found[i] = None
        i += 1
    loop = (pc() - start) / n
    floor = sorted(samples)[n // 2]
    h = new_histogram()
    start = pc()
    record_samples(h, samples)
    recording = (pc() - start) / n
    return float(loop), float(recording), int(floor)
