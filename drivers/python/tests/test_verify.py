"""Dataset.differ: the block-at-a-time comparison of fixed-size values finds exactly the wrong ones; below."""

import numpy as np

from kvbench_driver.derive import BLOCK, PRINTABLE, SEP, Dataset, below


def dataset(size: int) -> Dataset:
    return Dataset({"generator": "synthetic", "key": {"kind": "decimal", "width": 8},
                    "value": {"min": size, "max": size, "content": "printable"}, "loaded": 5000, "total": 5000,
                    "ordered": True, "pool_seed": 3, "value_seed": 4})


def test_differ_finds_each_wrong_value_of_fixed_size():
    ds = dataset(20)
    n = 2 * BLOCK + 7
    r, v = np.arange(n, dtype=np.uint64), np.arange(n, dtype=np.uint64) % 3
    found = ds.values(r, v)
    assert ds.items is not None and ds.differ(r, v, found) == []
    wrong = [0, BLOCK - 1, BLOCK + 5, n - 1]
    for q in wrong:
        found[q] = found[q][:-1] + (b"#" if found[q][-1:] != b"#" else b"$")  # same length, one byte changed
    assert ds.differ(r, v, found) == wrong
    found[3] = None  # absent: the general path finds it too
    assert ds.differ(r, v, found) == sorted(wrong + [3])
    found[3] = found[4]  # another record's value
    assert ds.differ(r, v, found) == sorted(wrong + [3])


def test_differ_finds_values_that_only_join_alike():
    """Wrong values whose bytes, joined, still read like the expected ones: a value cut short
    and its neighbour one byte longer, and two values merged around the separator byte."""
    ds = dataset(20)
    n = BLOCK + 3
    r, v = np.arange(n, dtype=np.uint64), np.zeros(n, np.uint64)
    found = ds.values(r, v)
    shifted = list(found)
    shifted[5], shifted[6] = found[5][:-1], found[5][-1:] + found[6]
    assert ds.differ(r, v, shifted) == [5, 6]
    merged = list(found)
    merged[7], merged[8], merged[9] = found[7] + SEP + found[8][:10], found[8][10:], found[9][:-1]  # same length
    assert ds.differ(r, v, merged) == [7, 8, 9]
    assert ds.differ(r, v, found[:-1] + [bytearray(found[-1])]) == []  # compared by content, like ==


def test_separator_is_never_in_a_value():
    assert SEP[0] not in PRINTABLE.tolist()
    assert SEP not in dataset(20).pool


def test_below_matches_the_128_bit_product():
    rng = np.random.default_rng(5)
    x = np.concatenate([rng.integers(0, 1 << 63, 5000, dtype=np.uint64) << np.uint64(1),
                        np.array([0, 1, (1 << 64) - 1, 1 << 63, (1 << 32) - 1, 1 << 32], np.uint64)])
    for n in (1, 3, 10 ** 6, (1 << 32) - 1, 1 << 32, 10 ** 12, (1 << 64) - 1):
        assert below(x, n).tolist() == [(a * n) >> 64 for a in x.tolist()], n
