"""The members' subscriptions as topic numbers, the form claim resolution and the index read.

The JSON path makes them from the members' topic names (`SubscriptionIds.of`); a compact body
(models/consumer/compact.py) already names each subscription's topics by number, so they come
from its lists without a lookup per name (`SubscriptionIds.of_lists`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import chain

import numpy as np


@dataclass(frozen=True)
class SubscriptionIds:
    """The members' subscriptions as topic numbers (positions in the sorted topic names), each
    distinct subscription once: member m reads topics[start[d]:start[d + 1]] for d = which[m]."""

    which: np.ndarray
    sizes: np.ndarray
    topics: np.ndarray

    @classmethod
    def of(cls, subscriptions: Sequence[frozenset[str]], position: dict[str, int]) -> SubscriptionIds:
        """`subscriptions` must hold only topics `position` numbers; each distinct one looked up
        once, at C speed."""
        distinct: dict[frozenset[str], int] = {}
        which = np.fromiter(
            (distinct.setdefault(s, len(distinct)) for s in subscriptions), np.int64, len(subscriptions)
        )
        sizes = np.fromiter(map(len, distinct), dtype=np.int64, count=len(distinct))
        topics = np.fromiter(map(position.__getitem__, chain.from_iterable(distinct)), np.int64, int(sizes.sum()))
        return cls(which, sizes, topics)

    @classmethod
    def of_lists(cls, which: Sequence[int], lists: Sequence[Sequence[int]], rank: np.ndarray) -> SubscriptionIds:
        """Member m reads topics `lists[which[m]]`, numbered as listed; `rank` numbers them as
        `position` would (the listed topic's position among the sorted names)."""
        sizes = np.fromiter(map(len, lists), dtype=np.int64, count=len(lists))
        flat = np.fromiter(chain.from_iterable(lists), dtype=np.int64, count=int(sizes.sum()))
        return cls(np.asarray(which, dtype=np.int64), sizes, rank[flat])

    def rows(self) -> np.ndarray:
        """Per entry of `topics`, its distinct subscription."""
        return np.repeat(np.arange(len(self.sizes), dtype=np.int64), self.sizes)

    def table(self, width: int) -> np.ndarray:
        """bool (distinct subscriptions, `width` topic numbers): whether the subscription reads it."""
        table = np.zeros((len(self.sizes), width), dtype=bool)
        table[self.rows(), self.topics] = True
        return table

    def members_in(self, order: Sequence[int]) -> SubscriptionIds:
        """The same subscriptions, member k being member order[k] here; only the lists some
        member reads are kept (the topics read are the topics of the lists)."""
        used, which = np.unique(self.which[np.asarray(order, dtype=np.int64)], return_inverse=True)
        starts, sizes = (np.cumsum(self.sizes) - self.sizes)[used].tolist(), self.sizes[used].tolist()
        pieces = [self.topics[a : a + size] for a, size in zip(starts, sizes, strict=True)]
        topics = np.concatenate(pieces) if pieces else np.zeros(0, dtype=np.int64)
        return SubscriptionIds(which.astype(np.int64), self.sizes[used], topics)
