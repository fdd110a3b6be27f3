"""Stable orders of integer keys, the way the solvers' hot paths need them.

numpy's stable argsort of 64-bit integers is a merge sort (about 40 ms for a million keys on this
project's reference machine); its plain sort is several times faster. A non-negative key packed
above its position sorts to the same order as a stable argsort of the keys, since equal keys then
compare by position: one plain sort instead of a merge sort, when key and position fit in 63 bits.
"""

from __future__ import annotations

import numpy as np


def stable_order(key: np.ndarray) -> np.ndarray:
    """`np.argsort(key, kind="stable")` for integer keys, as int64 positions."""
    n = len(key)
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    low, high = int(key.min()), int(key.max())
    bits = max(1, (n - 1).bit_length())
    if low < 0 or high.bit_length() + bits > 62:
        return np.argsort(key, kind="stable").astype(np.int64, copy=False)
    packed = np.sort((key.astype(np.int64, copy=False) << bits) | np.arange(n, dtype=np.int64))
    return packed & ((1 << bits) - 1)
