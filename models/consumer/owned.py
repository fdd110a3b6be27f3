"""The members' `owned` maps checked and flattened into integer columns in one pass over all
members, instead of pydantic validating a million small lists one by one.

`ConsumerMember.owned` skips pydantic's per-item validation; `ConsumerProblem` calls
`owned_columns` once for all members. When everything is a well-formed claim map (str topic
keys, lists of int partition numbers in Kafka's int32 range) the claims come back as columns
that claim resolution reuses. When anything is off, each member's map is validated exactly as
the field's declared type says (`OWNED`), so a client gets pydantic's own message for the first
bad item, naming `members[i].owned.<topic>[j]`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from itertools import chain, repeat
from typing import Annotated, Any

import numpy as np
from pydantic import ConfigDict, Field, TypeAdapter, ValidationError

from stickyd.models.errors import ProblemError, field_path
from stickyd.models.int_ranges import INT32_MAX, Int32

PartitionNumber = Annotated[Int32, Field(ge=0)]
TopicName = Annotated[str, Field(min_length=1)]
OwnedMap = dict[TopicName, list[PartitionNumber]]
"""what `owned` must be: topic -> partition numbers."""
OWNED: TypeAdapter[OwnedMap] = TypeAdapter(OwnedMap, config=ConfigDict(strict=True))


@dataclass(frozen=True, eq=False)
class DenseClaims:
    """One claimant per partition at most, as the compact body's `owners` sends them: per partition
    of every topic the claimant's position in the request's `members` list, or -1."""

    request_order: np.ndarray
    """topics in the request's order (the body's own array)."""
    by_name: np.ndarray
    """topics in name order (the order of `sorted(topics)`)."""
    counts: np.ndarray
    """partitions per topic, in name order."""

    @cached_property
    def claimed(self) -> tuple[np.ndarray, np.ndarray]:
        """(slot in `by_name`, its topic's index in name order) of every claimed partition, in slot
        order; made once for everything that reads the claims."""
        slot = np.flatnonzero(self.by_name >= 0)
        return slot, np.repeat(np.arange(len(self.counts), dtype=np.int64), self.counts)[slot]

    def columns(self, members: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The claims as (member, topic, partition) columns sorted by member, topic name and
        partition (the order claim resolution takes without sorting)."""
        offsets = np.concatenate([[0], np.cumsum(self.counts)]).astype(np.int64)
        slot, topic = self.claimed
        # a stable sort by member keeps each member's claims in (topic name, partition) order
        order = np.argsort(self.by_name[slot].astype(np.int16 if members < 2**15 else np.int32), kind="stable")
        slot, topic = slot[order], topic[order]
        return self.by_name[slot].astype(np.int64), topic, slot - offsets[topic]

    def member_topic_pairs(self, members: int) -> int:
        """How many distinct (member, topic) pairs the claims name."""
        slot, topic = self.claimed
        key = topic * members + self.by_name[slot]
        if len(self.counts) * members > PAIR_TABLE:
            return len(np.unique(key))
        seen = np.zeros(len(self.counts) * members, dtype=bool)
        seen[key] = True
        return int(np.count_nonzero(seen))


PAIR_TABLE = 50_000_000
"""largest (topic x member) table whose pairs are counted in a table; beyond, by sorting."""


class OwnedColumns:
    """Every listed claim as three columns, in the order of the members as given (not sorted by
    id); from `DenseClaims`, the columns are made when first read (claim resolution reads the dense
    array itself)."""

    def __init__(self, member: np.ndarray, topic: np.ndarray, partition: np.ndarray) -> None:
        self._columns: tuple[np.ndarray, np.ndarray, np.ndarray] | None = (member, topic, partition)
        self._members = 0
        self.dense: DenseClaims | None = None
        """the same claims, when the request sent them as one claimant per partition and nothing
        else (the compact body's `owners`)."""

    @classmethod
    def of_dense(cls, dense: DenseClaims, members: int) -> OwnedColumns:
        columns = cls.__new__(cls)
        columns._columns, columns._members, columns.dense = None, members, dense
        return columns

    @property
    def member(self) -> np.ndarray:
        """position of the claimant in the request's `members` list."""
        return self._read()[0]

    @property
    def topic(self) -> np.ndarray:
        """index of the claimed topic in `sorted(problem.topics)`, or -1 for a topic not in it."""
        return self._read()[1]

    @property
    def partition(self) -> np.ndarray:
        return self._read()[2]

    def _read(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        if self._columns is None:
            assert self.dense is not None
            self._columns = self.dense.columns(self._members)
        return self._columns

    def __eq__(self, other: object) -> bool:
        # part of the model's equality (pydantic compares private attributes too)
        if not isinstance(other, OwnedColumns):
            return NotImplemented
        return all(
            np.array_equal(a, b)
            for a, b in ((self.member, other.member), (self.topic, other.topic), (self.partition, other.partition))
        )

    __hash__ = None  # type: ignore[assignment]


def owned_columns(owned_maps: Sequence[Any], topic_position: dict[str, int]) -> OwnedColumns:
    """The claims of `owned_maps` (one per member) as columns; raises ProblemError naming the
    first item that does not fit `OwnedMap`."""
    columns = _fast_columns(owned_maps, topic_position)
    if columns is not None:
        return columns
    for i, owned in enumerate(owned_maps):
        try:
            OWNED.validate_python(owned)
        except ValidationError as error:
            detail = error.errors(include_url=False)[0]
            where = field_path(("members", i, "owned", *detail.get("loc", ())))
            raise ProblemError(where, str(detail.get("msg", "invalid value"))) from None
    # accepted by the exact check but not by the fast one (e.g. a subclass of list or int)
    return _slow_columns(owned_maps, topic_position)


def _fast_columns(owned_maps: Sequence[Any], topic_position: dict[str, int]) -> OwnedColumns | None:
    """Columns when every map is a plain dict of non-empty str -> list of int in range, else None."""
    if any(type(owned) is not dict for owned in owned_maps):
        return None
    keys = list(chain.from_iterable(owned_maps))
    if not all(type(k) is str and k for k in dict.fromkeys(keys)):
        return None
    lists = list(chain.from_iterable(map(dict.values, owned_maps)))
    if lists and set(map(type, lists)) != {list}:
        return None
    partitions = list(chain.from_iterable(lists))
    if partitions and set(map(type, partitions)) != {int}:
        return None
    try:
        partition = np.array(partitions, dtype=np.int64)
    except OverflowError:
        return None
    if len(partition) and (int(partition.min()) < 0 or int(partition.max()) > INT32_MAX):
        return None
    return _columns(owned_maps, keys, lists, partition, topic_position)


def _slow_columns(owned_maps: Sequence[Any], topic_position: dict[str, int]) -> OwnedColumns:
    maps = [dict(owned) for owned in owned_maps]
    keys = list(chain.from_iterable(maps))
    lists = [list(map(int, parts)) for parts in chain.from_iterable(map(dict.values, maps))]
    partition = np.array(list(chain.from_iterable(lists)), dtype=np.int64)
    return _columns(maps, keys, lists, partition, topic_position)


def _columns(
    owned_maps: Sequence[dict[str, Any]],
    keys: list[str],
    lists: list[list[int]],
    partition: np.ndarray,
    topic_position: dict[str, int],
) -> OwnedColumns:
    lists_per_member = np.fromiter(map(len, owned_maps), dtype=np.int64, count=len(owned_maps))
    sizes = np.fromiter(map(len, lists), dtype=np.int64, count=len(lists))
    topic_of_list = np.fromiter(map(topic_position.get, keys, repeat(-1)), dtype=np.int64, count=len(keys))
    member = np.repeat(np.repeat(np.arange(len(owned_maps), dtype=np.int64), lists_per_member), sizes)
    return OwnedColumns(member, np.repeat(topic_of_list, sizes), partition.reshape(-1))
