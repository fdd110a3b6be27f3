"""KIP-341 claim resolution over all claims at once, as integer columns.

Every member's `owned` map is flattened into three columns (member, topic, partition) with
C-level iteration only (no Python loop per member x topic, none per partition); duplicates,
ranges, subscriptions and generations are then settled with a few sorts over the whole table:

- the highest generation wins a partition;
- two different members claiming it at the same highest generation both lose it;
- claims on unknown topics, on partitions out of range, or on topics the claimant does not
  subscribe to are ignored (they never compete).

Every distinct claim that does not end up owning its partition is ignored for exactly one
`REASONS` entry; the warnings count them per reason and name the first few.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from itertools import chain, repeat

import numpy as np

from stickyd.models.consumer.owned import OwnedColumns
from stickyd.models.consumer.problem import ConsumerMember
from stickyd.models.consumer.subscription_ids import SubscriptionIds

NO_OWNER = -1
STALE, TIED, OUT_OF_RANGE, UNKNOWN_TOPIC, NOT_SUBSCRIBED = range(5)
REASONS = (
    "stale generation",
    "claimed twice at the same generation",
    "out of range",
    "unknown topic",
    "topic not subscribed",
)
EXAMPLES = 5
"""ignored claims named one by one in the warnings."""
DENSE_SUBSCRIPTIONS = 20_000_000
"""largest (distinct subscription x topic) table looked up densely; beyond, a sorted search."""


@dataclass(frozen=True)
class ReportedClaims:
    """Every distinct in-range claim on an existing topic, sorted by member, topic, partition:
    what each member says it owns (the cooperative protocol revokes from it).
    `reported[m]` is member m's claims as {topic: partitions}."""

    claims: OwnedColumns
    """the columns (topic: index into `topic_names`); from a dense body, made when first read."""
    topic_names: tuple[str, ...]
    member_count: int

    @property
    def member(self) -> np.ndarray:
        return self.claims.member

    @property
    def topic(self) -> np.ndarray:
        return self.claims.topic

    @property
    def partition(self) -> np.ndarray:
        return self.claims.partition

    def member_topic_pairs(self) -> int:
        """How many distinct (member, topic) pairs the claims name."""
        if self.claims.dense is not None:
            return self.claims.dense.member_topic_pairs(self.member_count)
        member, topic = self.member, self.topic
        if not len(member):
            return 0
        return 1 + int(np.count_nonzero((np.diff(member) != 0) | (np.diff(topic) != 0)))

    def __len__(self) -> int:
        return self.member_count

    def __iter__(self) -> Iterator[dict[str, np.ndarray]]:
        return (self[m] for m in range(self.member_count))

    def __getitem__(self, m: int) -> dict[str, np.ndarray]:
        if not 0 <= m < self.member_count:
            raise IndexError(m)
        lo, hi = np.searchsorted(self.member, [m, m + 1]).tolist()
        topics, parts = self.topic[lo:hi], self.partition[lo:hi]
        cuts = np.flatnonzero(np.diff(topics)) + 1
        starts = [0, *cuts.tolist()]
        ends = [*cuts.tolist(), hi - lo]
        return {self.topic_names[int(topics[s])]: parts[s:e] for s, e in zip(starts, ends, strict=True) if e > s}


@dataclass(frozen=True)
class Resolution:
    owner: dict[str, np.ndarray]
    """subscribed topic -> resolved claimant per partition, or NO_OWNER."""
    conflicted: dict[str, np.ndarray]
    """topic -> partitions claimed by two members at the same highest generation (only topics with some)."""
    reported: ReportedClaims
    ignored: int
    warnings: tuple[str, ...]


def resolve_claims(
    members: Sequence[ConsumerMember],
    member_ids: Sequence[str],
    subscriptions: Sequence[frozenset[str]],
    topic_counts: dict[str, int],
    subscribed_topics: Sequence[str],
    columns: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None,
    ids: SubscriptionIds | None = None,
) -> Resolution:
    """Resolve the claims of `members` (sorted by id; index = member number) on `topic_counts`.
    `columns`: the claims as (member, topic, partition) when already flattened (topic = position
    in `sorted(topic_counts)`, -1 when unknown); else read from the members' `owned` maps.
    `ids`: the subscriptions as those positions, when the caller has them."""
    names = tuple(sorted(topic_counts))
    position = {t: i for i, t in enumerate(names)}
    counts = np.array([topic_counts[t] for t in names], dtype=np.int64)
    offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    member, topic, partition = columns if columns is not None else _claim_columns(members, position)
    member, topic, partition = _distinct(member, topic, partition, len(members), len(names))

    known = topic >= 0
    # topic -1 (unknown) reads the appended 0: never in range, also when no topic exists at all
    in_range = known & (partition < np.append(counts, 0)[topic])
    reported = ReportedClaims(OwnedColumns(member[in_range], topic[in_range], partition[in_range]), names, len(members))
    subscribed = np.zeros(len(member), dtype=bool)
    subscribed[in_range] = _subscribes(member[in_range], topic[in_range], subscriptions, position, ids)

    reason = np.full(len(member), -1, dtype=np.int64)
    reason[~known] = UNKNOWN_TOPIC
    reason[known & ~in_range] = OUT_OF_RANGE
    reason[in_range & ~subscribed] = NOT_SUBSCRIBED

    generation = np.array([m.generation for m in members], dtype=np.int64)
    live = np.flatnonzero(subscribed)
    key = offsets[topic[live]] + partition[live]
    gen = generation[member[live]]
    # per partition: the highest generation claiming it, and how many claim it at that generation
    size = int(offsets[-1])
    # one generation (the common case): every claim is at the best
    if len(gen) and gen.min() == gen.max():
        best_gen = gen
        at_best = np.ones(len(gen), dtype=bool)
    else:
        best = np.full(size, np.iinfo(np.int64).min, dtype=np.int64)
        np.maximum.at(best, key, gen)
        best_gen = best[key]
        at_best = gen == best_gen
    # deduplicated, so a second claim of a key at its best generation is another member's: a tie
    tied_flat = np.bincount(key[at_best], minlength=size) > 1
    tied_key = tied_flat[key]
    reason[live[~at_best]] = STALE
    reason[live[at_best & tied_key]] = TIED
    winners = at_best & ~tied_key

    owner_flat = np.full(size, NO_OWNER, dtype=np.int64)
    owner_flat[key[winners]] = member[live[winners]]
    owner = {t: owner_flat[offsets[position[t]] : offsets[position[t] + 1]] for t in subscribed_topics}
    conflicted = {}
    tied_at = np.flatnonzero(tied_flat)
    tied_topic = np.searchsorted(offsets, tied_at, side="right") - 1
    for t in np.unique(tied_topic).tolist():
        conflicted[names[t]] = tied_at[tied_topic == t] - offsets[t]
    ignored = np.flatnonzero(reason >= 0)
    table = _Columns(member, topic, partition, reason, live, best_gen)
    warnings = _warnings(ignored, table, members, member_ids, names, counts)
    return Resolution(owner, conflicted, reported, len(ignored), warnings)


def resolve_dense_claims(
    members: Sequence[ConsumerMember],
    member_ids: Sequence[str],
    subscriptions: Sequence[frozenset[str]],
    topic_counts: dict[str, int],
    subscribed_topics: Sequence[str],
    claims: OwnedColumns,
    ids: SubscriptionIds,
) -> Resolution:
    """`resolve_claims` for one claimant per partition at most (`claims.dense`, the compact body's
    `owners`, from members listed in id order): nothing competes, so no claim is stale or tied and
    every claim is in range; a claimant keeps its partition when it subscribes to the topic. The
    claims are read in place, without a column per claim."""
    assert claims.dense is not None
    names = tuple(sorted(topic_counts))
    counts = np.array([topic_counts[t] for t in names], dtype=np.int64)
    offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    position = {t: i for i, t in enumerate(names)}
    owner_flat = claims.dense.by_name.astype(np.int64)
    reported = ReportedClaims(claims, names, len(members))
    if (ids.sizes == len(names)).all():  # every member reads every topic: every claim is kept
        return Resolution(_by_topic(owner_flat, offsets, position, subscribed_topics), {}, reported, 0, ())
    flat, topic = claims.dense.claimed
    claimant = owner_flat[flat]
    unsubscribed = ~_subscribes(claimant, topic, subscriptions, position, ids)
    # a claim on a topic the claimant does not subscribe to is ignored
    ignored = flat[unsubscribed]
    owner_flat[ignored] = NO_OWNER
    owner = _by_topic(owner_flat, offsets, position, subscribed_topics)
    if not len(ignored):
        return Resolution(owner, {}, reported, 0, ())
    # the ignored claims in (member, topic, partition) order, as the warnings name them
    member, topic = claimant[unsubscribed], topic[unsubscribed]
    partition = ignored - offsets[topic]
    order = np.lexsort((partition, topic, member))
    reason = np.full(len(order), NOT_SUBSCRIBED, dtype=np.int64)
    nothing = np.zeros(0, dtype=np.int64)
    table = _Columns(member[order], topic[order], partition[order], reason, nothing, nothing)
    warnings = _warnings(np.arange(len(order)), table, members, member_ids, names, counts)
    return Resolution(owner, {}, reported, len(order), warnings)


def _by_topic(
    owner_flat: np.ndarray, offsets: np.ndarray, position: dict[str, int], topics: Sequence[str]
) -> dict[str, np.ndarray]:
    return {t: owner_flat[offsets[position[t]] : offsets[position[t] + 1]] for t in topics}


def _claim_columns(
    members: Sequence[ConsumerMember], position: dict[str, int]
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(member, topic, partition) per listed claim, topic -1 when unknown."""
    maps = [m.owned for m in members]
    lists_per_member = np.fromiter(map(len, maps), dtype=np.int64, count=len(maps))
    sizes = np.fromiter(map(len, chain.from_iterable(d.values() for d in maps)), dtype=np.int64)
    topic_ids = np.fromiter(
        map(position.get, chain.from_iterable(maps), repeat(-1)), dtype=np.int64, count=int(lists_per_member.sum())
    )
    total = int(sizes.sum())
    partition = np.fromiter(chain.from_iterable(chain.from_iterable(d.values() for d in maps)), np.int64, total)
    member = np.repeat(np.repeat(np.arange(len(maps), dtype=np.int64), lists_per_member), sizes)
    return member, np.repeat(topic_ids, sizes), partition


def _distinct(
    member: np.ndarray, topic: np.ndarray, partition: np.ndarray, members: int, topics: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The claims sorted by (member, topic, partition), each once."""
    if not len(member):
        return member, topic, partition
    span = int(partition.max()) + 1
    if members * (topics + 1) * span < 2**62:
        packed = (member * (topics + 1) + topic + 1) * span + partition
        if (packed[1:] > packed[:-1]).all():  # as Kafka's clients list them: sorted and distinct already
            return member, topic, partition
        packed = np.sort(packed, kind="stable")
        packed = packed[np.append(True, packed[1:] != packed[:-1])]
        row, partition = np.divmod(packed, span)
        member, topic = np.divmod(row, topics + 1)
        return member, topic - 1, partition
    order = np.lexsort((partition, topic, member))
    member, topic, partition = member[order], topic[order], partition[order]
    keep = np.ones(len(member), dtype=bool)
    keep[1:] = (member[1:] != member[:-1]) | (topic[1:] != topic[:-1]) | (partition[1:] != partition[:-1])
    return member[keep], topic[keep], partition[keep]


def _subscribes(
    member: np.ndarray,
    topic: np.ndarray,
    subscriptions: Sequence[frozenset[str]],
    position: dict[str, int],
    ids: SubscriptionIds | None = None,
) -> np.ndarray:
    """Whether each claimant subscribes to the claimed topic."""
    if ids is None:
        # only known topics count: each distinct subscription cut down once
        known = {s: s if s <= position.keys() else s & position.keys() for s in dict.fromkeys(subscriptions)}
        ids = SubscriptionIds.of([known[s] for s in subscriptions], position)
    set_of, cols = ids.which, ids.topics
    width = len(position)
    if (ids.sizes == width).all():  # every member reads every topic (equal subscriptions)
        return np.ones(len(member), dtype=bool)
    if len(ids.sizes) * width <= DENSE_SUBSCRIPTIONS:
        table = ids.table(width)
        if len(set_of) * width <= DENSE_SUBSCRIPTIONS:  # one row per member, read flat: a single gather
            return np.take(table[set_of].ravel(), member * width + topic)
        return table[set_of[member], topic]
    keys = np.sort(ids.rows() * width + cols)
    wanted = set_of[member] * width + topic
    at = np.minimum(np.searchsorted(keys, wanted), max(0, len(keys) - 1))
    return keys[at] == wanted if len(keys) else np.zeros(len(wanted), dtype=bool)


@dataclass(frozen=True)
class _Columns:
    member: np.ndarray
    topic: np.ndarray
    partition: np.ndarray
    reason: np.ndarray
    live: np.ndarray
    """claims that competed (subscribed, in range), in claim order."""
    best_gen: np.ndarray
    """per `live` claim: the highest generation claiming its partition."""


def _warnings(
    ignored: np.ndarray,
    c: _Columns,
    members: Sequence[ConsumerMember],
    member_ids: Sequence[str],
    names: tuple[str, ...],
    counts: np.ndarray,
) -> tuple[str, ...]:
    """One line with the counts per reason, then the first few ignored claims by name."""
    if not len(ignored):
        return ()
    per_reason = np.bincount(c.reason[ignored], minlength=len(REASONS))
    summary = ", ".join(f"{int(n)} {REASONS[r]}" for r, n in enumerate(per_reason.tolist()) if n)
    lines = [f"{len(ignored)} claimed partitions ignored ({summary})"]
    where_live = np.full(len(c.member), -1, dtype=np.int64)
    where_live[c.live] = np.arange(len(c.live))
    for i in ignored[:EXAMPLES].tolist():
        m, r, p, t = int(c.member[i]), int(c.reason[i]), int(c.partition[i]), int(c.topic[i])
        generation = members[m].generation
        name = names[t] if t >= 0 else _unknown_topic(members[m], names, p)
        what = REASONS[r]
        if r == STALE:
            what = f"stale generation {generation} (another member claims it at {int(c.best_gen[where_live[i]])})"
        elif r == TIED:
            what = f"another member claims it at the same generation {generation}"
        elif r == OUT_OF_RANGE:
            what = f"out of range ({name} has {int(counts[t])} partitions)"
        lines.append(f"ignored claim: member {member_ids[m]}, topic {name}, partition {p}: {what}")
    return tuple(lines)


def _unknown_topic(member: ConsumerMember, names: tuple[str, ...], partition: int) -> str:
    known = set(names)
    return min((t for t, parts in member.owned.items() if t not in known and partition in parts), default="?")
