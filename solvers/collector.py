"""The cyclic garbage collector paused while one solve allocates millions of small objects.

A 1M-partition request parses into a million small lists and answers with another million; none
of them holds a reference cycle, but every allocation counts towards the collector's thresholds,
so its full collections rescan all of them again and again: 1.4 of 3.3 s CPU of a 1M x 2,000
solve (measured with Kafka-like claims, bench/layouts.py). Reference counting still frees
everything as usual; the collector runs again as soon as the solve returns.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def collector_paused() -> Iterator[None]:
    """No cyclic collection inside the block; the previous setting is restored after it."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
