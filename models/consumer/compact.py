"""The compact consumer request (docs/wire-format.md, "The compact encoding"): MessagePack after a
magic prefix, members by index, one subscription list shared by the members that have it, and the
claims as runs of partitions in one little-endian int32 array.

`decode_compact` turns it into what the JSON path would have decoded (the contract dict, members
as dicts) plus the claim columns, without a Python object per partition; every client mistake is
a ProblemError naming the field, as with JSON bodies.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from operator import itemgetter
from typing import Annotated, Any

import msgspec
import numpy as np
from msgspec import UNSET, UnsetType

from stickyd.models.consumer.owned import DenseClaims, OwnedColumns
from stickyd.models.consumer.problem import OWNED_COLUMNS_GIVEN, SUBSCRIPTION_IDS_GIVEN, SUBSCRIPTIONS_FROM_TOPICS
from stickyd.models.consumer.subscription_ids import SubscriptionIds
from stickyd.models.errors import ProblemError
from stickyd.models.int_ranges import INT32_MAX

MEDIA_TYPE = "application/vnd.stickyd.consumer+msgpack"
MAGIC = b"\xffstickyd\x01"
"""what a compact body (request or answer) starts with: never valid UTF-8, so never JSON."""
RUN_WORDS = 4
"""an `owned` run is 4 int32: member, topic, first partition, partition count."""
CLAIMS_PER_PARTITION = 4
"""the most claims a body may expand to, per partition of its topics (plus one topic's worth)."""


class _Topic(msgspec.Struct, array_like=True):
    name: str
    partitions: int


class _Member(msgspec.Struct, array_like=True):
    id: str
    subscription: int
    generation: int = -1
    rack: str | None = None
    capacity: int | None = None


class _Request(msgspec.Struct, forbid_unknown_fields=True):
    topics: list[_Topic]
    subscriptions: list[list[Annotated[int, msgspec.Meta(ge=0)]]]
    members: list[_Member]
    owned: bytes = b""
    owners: bytes = b""
    options: dict[str, Any] | UnsetType = UNSET
    copartitioned: Any = UNSET
    partition_racks: Any = UNSET
    partition_weights: Any = UNSET


_DECODER = msgspec.msgpack.Decoder(_Request)
_ARRAY_FIELDS = {
    "topics": _Topic.__struct_fields__,
    "members": _Member.__struct_fields__,
}
_AT = re.compile(r"\$\.(\w+)\[(\d+)\]\[(\d+)\]")
_RUN_FIELDS = ("member", "topic", "first", "count")


def is_compact(body: bytes) -> bool:
    return body[: len(MAGIC)] == MAGIC


@dataclass(frozen=True)
class CompactRequest:
    """A decoded compact body: the contract's dict now, the claim columns when asked (after the
    service checked the request's size against its limits)."""

    data: dict[str, Any]
    owned: bytes
    owners: bytes
    names: list[str]
    partitions: list[int]
    subscriptions: list[list[int]]
    """the body's subscription lists (topic indices, checked in range)."""
    member_subscription: list[int]
    """per member, its subscription's index."""

    @property
    def context(self) -> dict[str, Any]:
        """pydantic's validation context that hands the claim columns to ConsumerProblem; raises
        ProblemError naming a bad run."""
        for i, count in enumerate(self.partitions):
            if not 0 <= count <= INT32_MAX:
                raise ProblemError(f"topics[{i}].partitions", f"{count} is not a partition count (0 to {INT32_MAX})")
        counts = np.array(self.partitions, dtype=np.int64)
        members = len(self.data["members"])
        by_runs = owned_columns_from_runs(self.owned, members, counts, self.names)
        if not self.owners:
            return {OWNED_COLUMNS_GIVEN: by_runs, **self._subscriptions_given()}
        by_owners = owned_columns_from_owners(self.owners, members, counts, self.names)
        if not len(by_runs.member):
            return {OWNED_COLUMNS_GIVEN: by_owners, **self._subscriptions_given()}
        both = (np.concatenate([a, b]) for a, b in zip(_fields(by_owners), _fields(by_runs), strict=True))
        return {OWNED_COLUMNS_GIVEN: OwnedColumns(*both), **self._subscriptions_given()}

    def _subscriptions_given(self) -> dict[str, Any]:
        """The members' topics as names (checked here once) and as numbers in name order."""
        rank = np.empty(len(self.names), dtype=np.int64)
        rank[name_order(self.names)] = np.arange(len(self.names), dtype=np.int64)
        ids = SubscriptionIds.of_lists(self.member_subscription, self.subscriptions, rank)
        return {SUBSCRIPTIONS_FROM_TOPICS: True, SUBSCRIPTION_IDS_GIVEN: ids}


def decode_compact(body: bytes) -> CompactRequest:
    """The request as the contract's dict (members as dicts, subscriptions as topic names);
    raises ProblemError."""
    if not is_compact(body):
        raise ProblemError("body", f"a compact body starts with the bytes {MAGIC!r}")
    request = _decode(memoryview(body)[len(MAGIC) :])
    names = [t.name for t in request.topics]
    _check_topics(names)
    subscriptions = _subscription_names(request.subscriptions, names)
    members: list[dict[str, Any]] = []
    for i, member in enumerate(request.members):
        if not 0 <= member.subscription < len(subscriptions):
            raise ProblemError(
                f"members[{i}].subscription",
                f"subscription index {member.subscription} out of range ({len(subscriptions)} subscriptions)",
            )
        fields: dict[str, Any] = {"id": member.id, "topics": subscriptions[member.subscription]}
        if member.generation != -1:
            fields["generation"] = member.generation
        if member.rack is not None:
            fields["rack"] = member.rack
        if member.capacity is not None:
            fields["capacity"] = member.capacity
        members.append(fields)
    data: dict[str, Any] = {"topics": {t.name: t.partitions for t in request.topics}, "members": members}
    for name in ("options", "copartitioned", "partition_racks", "partition_weights"):
        value = getattr(request, name)
        if value is not UNSET:
            data[name] = value
    return CompactRequest(
        data,
        request.owned,
        request.owners,
        names,
        [t.partitions for t in request.topics],
        request.subscriptions,
        [member.subscription for member in request.members],
    )


def _decode(payload: memoryview) -> _Request:
    try:
        return _DECODER.decode(payload)
    except msgspec.ValidationError as problem:
        text = str(problem)
        reason, _, where = text.partition(" - at `")
        raise ProblemError(_field_of(where.rstrip("`")), reason) from None
    except (msgspec.DecodeError, ValueError, RecursionError) as problem:
        raise ProblemError("body", f"not a valid compact body ({problem})") from None


def _field_of(where: str) -> str:
    """msgspec's `$.members[3][1]` as `members[3].subscription`."""
    match = _AT.fullmatch(where)
    if match and match.group(1) in _ARRAY_FIELDS:
        fields = _ARRAY_FIELDS[match.group(1)]
        k = int(match.group(3))
        if k < len(fields):
            return f"{match.group(1)}[{match.group(2)}].{fields[k]}"
    return where.removeprefix("$.").removeprefix("$") or "body"


def _check_topics(names: list[str]) -> None:
    seen: dict[str, int] = {}
    for i, name in enumerate(names):
        if name in seen:
            raise ProblemError(f"topics[{i}].name", f"duplicate topic {name!r} (also topics[{seen[name]}])")
        seen[name] = i


def _subscription_names(subscriptions: list[list[int]], names: list[str]) -> list[list[str]]:
    """Each subscription's topic names (its indices are not negative: the decoder checks that)."""
    try:
        # itemgetter looks the names up in one C call (one topic: a name, not a tuple)
        return [list(itemgetter(*ts)(names)) if len(ts) > 1 else [names[t] for t in ts] for ts in subscriptions]
    except IndexError:
        s, k = next((s, k) for s, ts in enumerate(subscriptions) for k, t in enumerate(ts) if t >= len(names))
        t = subscriptions[s][k]
        raise ProblemError(f"subscriptions[{s}][{k}]", f"topic index {t} out of range ({len(names)} topics)") from None


def _fields(columns: OwnedColumns) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    return columns.member, columns.topic, columns.partition


def name_order(names: list[str]) -> np.ndarray:
    """The request's topic indices in name order (the order of `sorted(topics)`)."""
    return np.argsort(np.array(names, dtype=object), kind="stable").astype(np.int64)


def owned_columns_from_owners(owners: bytes, members: int, counts: np.ndarray, names: list[str]) -> OwnedColumns:
    """The claims of a dense `owners` array (per partition of every listed topic, in the order of
    `topics`: the claimant's member index, or -1), kept dense (`DenseClaims`, also laid out in
    topic name order); raises ProblemError."""
    offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    if len(owners) != 4 * int(offsets[-1]):
        raise ProblemError(
            "owners", f"{len(owners)} bytes, but the topics have {int(offsets[-1])} partitions (4 bytes each)"
        )
    dense = np.frombuffer(owners, dtype="<i4")
    bad = (dense < -1) | (dense >= members)
    if bad.any():
        k = int(np.flatnonzero(bad)[0])
        t = int(np.searchsorted(offsets, k, side="right")) - 1
        where = f"{names[t]} partition {k - int(offsets[t])}"
        raise ProblemError(f"owners[{k}]", f"member index {int(dense[k])} out of range ({members} members; {where})")
    order = name_order(names)
    by_name = dense
    if (np.diff(order) < 0).any():  # lay the topics out in name order
        by_name = np.concatenate([dense[offsets[t] : offsets[t + 1]] for t in order.tolist()])
    return OwnedColumns.of_dense(DenseClaims(dense, by_name, counts[order]), members)


def owned_columns_from_runs(owned: bytes, members: int, counts: np.ndarray, names: list[str]) -> OwnedColumns:
    """The runs of `owned` expanded into claim columns (member in request order, topic by position
    in `sorted(names)`); raises ProblemError naming the first bad run."""
    if len(owned) % (4 * RUN_WORDS):
        raise ProblemError("owned", f"{len(owned)} bytes is not a whole number of runs ({4 * RUN_WORDS} bytes each)")
    runs = np.frombuffer(owned, dtype="<i4").reshape(-1, RUN_WORDS).astype(np.int64)
    member, topic, first, count = runs.T
    _check_runs(member, topic, first, count, members, counts, names)
    total = int(count.sum())
    if total > CLAIMS_PER_PARTITION * int(counts.sum()) + int(counts.max(initial=0)):
        raise ProblemError(
            "owned", f"{total} claims for {int(counts.sum())} partitions (at most {CLAIMS_PER_PARTITION} per partition)"
        )
    order = np.argsort(member, kind="stable") if len(member) and (np.diff(member) < 0).any() else None
    if order is not None:
        member, topic, first, count = member[order], topic[order], first[order], count[order]
    sorted_position = np.empty(len(names), dtype=np.int64)
    sorted_position[name_order(names)] = np.arange(len(names))
    starts = np.cumsum(count) - count
    partition = np.arange(total, dtype=np.int64) - np.repeat(starts - first, count)
    return OwnedColumns(np.repeat(member, count), np.repeat(sorted_position[topic], count), partition)


def _check_runs(
    member: np.ndarray,
    topic: np.ndarray,
    first: np.ndarray,
    count: np.ndarray,
    members: int,
    counts: np.ndarray,
    names: list[str],
) -> None:
    topics = len(counts)
    bad = (member < 0) | (member >= members)
    bad |= (topic < 0) | (topic >= topics)
    bad |= (first < 0) | (count < 1)
    if not bad.any():
        bad = first + count > counts[topic]
    if not bad.any():
        return
    r = int(np.flatnonzero(bad)[0])
    m, t, p, n = (int(v) for v in (member[r], topic[r], first[r], count[r]))
    if not 0 <= m < members:
        raise ProblemError(f"owned[{r}].member", f"member index {m} out of range ({members} members)")
    if not 0 <= t < topics:
        raise ProblemError(f"owned[{r}].topic", f"unknown topic index {t} ({topics} topics)")
    if p < 0:
        raise ProblemError(f"owned[{r}].first", f"partition {p} is negative")
    if n < 1:
        raise ProblemError(f"owned[{r}].count", f"a run holds at least 1 partition, got {n}")
    last = min(p + n - 1, INT32_MAX)
    raise ProblemError(
        f"owned[{r}]", f"partitions {p}..{last} out of range ({names[t]} has {int(counts[t])} partitions)"
    )
