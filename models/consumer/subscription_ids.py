"""The members' subscriptions as topic numbers, the form claim resolution and the index read.

The JSON path makes them from the members' topic names (`SubscriptionIds.of`); a compact body
(models/consumer/compact.py) already names each subscription's topics by number, so they come
from its lists without a lookup per name (`SubscriptionIds.of_lists`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import chain
from typing import overload

import numpy as np


@dataclass(frozen=True)
class SubscriptionIds:
    """The members' subscriptions as topic numbers (positions in the sorted topic names), each
    distinct subscription once: member m reads topics[start[d]:start[d + 1]] for d = which[m]."""

    which: np.ndarray
    sizes: np.ndarray
    topics: np.ndarray
    _tables: dict[int, np.ndarray] = field(default_factory=dict, init=False, repr=False, compare=False)

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
        """bool (distinct subscriptions, `width` topic numbers): whether the subscription reads it;
        made once per width (the claims' check and the index both read it: not to be written)."""
        table = self._tables.get(width)
        if table is None:
            table = self._tables[width] = np.zeros((len(self.sizes), width), dtype=bool)
            table[self.rows(), self.topics] = True
        return table

    def listed_once(self, width: int) -> bool:
        """Whether no subscription lists a topic twice (a compact body's lists could)."""
        return bool((np.count_nonzero(self.table(width), axis=1) == self.sizes).all())

    def same_topics(self, width: int) -> bool:
        """Whether every member reads the same topics (distinct lists may hold the same ones)."""
        table = self.table(width)
        return bool((table == table[:1]).all())

    def members_in(self, order: Sequence[int]) -> SubscriptionIds:
        """The same subscriptions, member k being member order[k] here; only the lists some
        member reads are kept (the topics read are the topics of the lists)."""
        used, which = np.unique(self.which[np.asarray(order, dtype=np.int64)], return_inverse=True)
        if len(used) == len(self.sizes):  # every list is read (`used` is then 0, 1, 2, ...)
            return SubscriptionIds(which.astype(np.int64), self.sizes, self.topics)
        starts, sizes = (np.cumsum(self.sizes) - self.sizes)[used].tolist(), self.sizes[used].tolist()
        pieces = [self.topics[a : a + size] for a, size in zip(starts, sizes, strict=True)]
        topics = np.concatenate(pieces) if pieces else np.zeros(0, dtype=np.int64)
        return SubscriptionIds(which.astype(np.int64), self.sizes[used], topics)


class SubscribedNames(Sequence[frozenset[str]]):
    """Each member's subscribed topics by name, made from `ids` (numbers into `names`) the first
    time a member of each distinct subscription is read: the plain solvers read only the numbers,
    and 2,000 distinct subscriptions of hundreds of names take longer to make than to index."""

    def __init__(self, ids: SubscriptionIds, names: Sequence[str]) -> None:
        self._ids, self._names = ids, names
        self._starts = (np.cumsum(ids.sizes) - ids.sizes).tolist()
        self._made: dict[int, frozenset[str]] = {}

    def __len__(self) -> int:
        return len(self._ids.which)

    @overload
    def __getitem__(self, member: int) -> frozenset[str]: ...

    @overload
    def __getitem__(self, member: slice) -> tuple[frozenset[str], ...]: ...

    def __getitem__(self, member: int | slice) -> frozenset[str] | tuple[frozenset[str], ...]:
        if isinstance(member, slice):
            return tuple(self[m] for m in range(len(self))[member])
        distinct = int(self._ids.which[member])
        made = self._made.get(distinct)
        if made is None:
            start = self._starts[distinct]
            listed = self._ids.topics[start : start + int(self._ids.sizes[distinct])].tolist()
            made = self._made[distinct] = frozenset(map(self._names.__getitem__, listed))
        return made
