"""stable_order is numpy's stable argsort, whatever the keys: packed into one plain sort when
key and position fit, a merge sort otherwise."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from stickyd.solvers.sorting import stable_order


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(min_value=-(2**40), max_value=2**62), max_size=300), st.booleans())
def test_the_order_is_a_stable_argsort(keys: list[int], narrow: bool) -> None:
    key = np.array(keys, dtype=np.int64)
    if narrow:  # few distinct keys, many ties: the case that needs the stability
        key = key % 7 if len(key) else key
    assert stable_order(key).tolist() == np.argsort(key, kind="stable").tolist()


def test_a_million_keys_with_ties_keep_their_positions_in_order() -> None:
    key = np.random.default_rng(3).integers(0, 1_000, 1_000_000)
    order = stable_order(key)
    assert order.dtype == np.int64
    assert np.array_equal(order, np.argsort(key, kind="stable"))
