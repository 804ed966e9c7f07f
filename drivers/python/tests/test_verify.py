"""Dataset.differ: the block-at-a-time comparison of fixed-size values finds exactly the wrong ones."""

import numpy as np

from kvbench_driver.derive import BLOCK, Dataset


def dataset(size: int) -> Dataset:
    return Dataset({"generator": "synthetic", "key": {"kind": "decimal", "width": 8},
                    "value": {"min": size, "max": size, "content": "printable"}, "loaded": 5000, "total": 5000,
                    "ordered": True, "pool_seed": 3, "value_seed": 4})


def test_differ_finds_each_wrong_value_of_fixed_size():
    ds = dataset(20)
    n = 2 * BLOCK + 7
    r, v = np.arange(n, dtype=np.uint64), np.arange(n, dtype=np.uint64) % 3
    found = ds.values(r, v)
    assert ds.window is not None and ds.differ(r, v, found) == []
    wrong = [0, BLOCK - 1, BLOCK + 5, n - 1]
    for q in wrong:
        found[q] = found[q][:-1] + (b"#" if found[q][-1:] != b"#" else b"$")  # same length, one byte changed
    assert ds.differ(r, v, found) == wrong
    found[3] = None  # absent: the general path finds it too
    assert ds.differ(r, v, found) == sorted(wrong + [3])
    found[3] = found[4]  # another record's value
    assert ds.differ(r, v, found) == sorted(wrong + [3])
