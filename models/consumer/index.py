"""Index a consumer problem once: members by id, claims resolved, partitions grouped in units.

A *unit* is what goes to one member as a whole: a single partition, or (KIP-315) partition
number p of every topic of a co-partitioned group. Every solver and the validator work from
the same `ConsumerIndex`, so claim resolution and eligibility are defined in one place.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property
from operator import attrgetter

import numpy as np

from stickyd.models.consumer.claims import (
    NO_OWNER,
    ReportedClaims,
    resolve_claims,
    resolve_dense_claims,
)
from stickyd.models.consumer.problem import ConsumerMember, ConsumerProblem
from stickyd.models.consumer.subscription_ids import SubscribedNames, SubscriptionIds

__all__ = ["NO_OWNER", "ConsumerIndex", "UnitGroup", "index_consumer_problem"]


@dataclass(frozen=True)
class UnitGroup:
    """Partition number p < `units` of every topic in `topics` goes to one member."""

    topics: tuple[str, ...]
    units: int
    eligible: tuple[int, ...]
    """Member indices that may take a unit: subscribers to the most topics of the group."""
    weight: int
    """partitions one unit gives any eligible member (the group topics it subscribes to)."""
    claims: np.ndarray
    """shape (len(topics), units): resolved claimant of partition p of topics[i], or -1."""
    racks: tuple[tuple[frozenset[str] | None, ...], ...] | None = None
    """per topic, per partition: the racks holding a replica, when the request gives them."""
    eligible_array: np.ndarray | None = field(default=None, repr=False, compare=False)
    """`eligible` as an int64 array when indexing made one (read through
    `ConsumerIndex.eligible_ids`)."""

    @property
    def name(self) -> str:
        return "+".join(self.topics)

    def subscribed_topics(self, member_topics: frozenset[str]) -> tuple[str, ...]:
        return tuple(t for t in self.topics if t in member_topics)


@dataclass(frozen=True)
class ConsumerIndex:
    members: tuple[str, ...]
    """member ids, sorted: index i is the member's integer id everywhere."""
    subscriptions: Sequence[frozenset[str]]
    """existing topics each member subscribes to."""
    generations: tuple[int, ...]
    racks: tuple[str | None, ...]
    groups: tuple[UnitGroup, ...]
    topics: dict[str, int]
    """subscribed, existing topics and their partition counts."""
    reported: ReportedClaims
    """`reported[m]`: every in-range partition member m says it owns (cooperative revocation)."""
    conflicted: dict[str, np.ndarray]
    """topic -> partitions claimed by two members at the same highest generation."""
    owned: int
    """partitions with a valid claim after resolution that can be assigned."""
    equal_subscriptions: bool
    warnings: tuple[str, ...] = field(default_factory=tuple)

    @property
    def member_count(self) -> int:
        return len(self.members)

    @property
    def has_racks(self) -> bool:
        return any(g.racks is not None for g in self.groups) and any(self.racks)

    @cached_property
    def eligible_ids(self) -> tuple[np.ndarray, ...]:
        """Per group, its `eligible` members as an int64 array, made once (groups read by the
        same members share one array, as they share the tuple)."""
        shared: dict[int, np.ndarray] = {}
        for group in self.groups:
            if id(group.eligible) not in shared:
                made = group.eligible_array
                shared[id(group.eligible)] = (
                    made if made is not None else np.fromiter(group.eligible, dtype=np.int64, count=len(group.eligible))
                )
        return tuple(shared[id(group.eligible)] for group in self.groups)


def index_consumer_problem(problem: ConsumerProblem) -> ConsumerIndex:
    """Resolve claims (KIP-341) and group partitions into units (KIP-315)."""
    order = id_order(problem)
    members = [problem.members[i] for i in order]
    warnings: list[str] = []
    names = sorted(problem.topics)
    subscriptions, ids = _subscriptions(problem, members, order, names, warnings)
    read = np.flatnonzero(np.bincount(ids.topics, minlength=len(names)))
    subscribed = [names[i] for i in read.tolist()]
    topics = {t: problem.topics[t] for t in subscribed}

    member_ids = tuple(map(_ID, members))
    if _one_claimant(problem, order):
        assert problem.owned_columns is not None
        claims = resolve_dense_claims(
            members, member_ids, subscriptions, problem.topics, subscribed, problem.owned_columns, ids
        )
    else:
        columns = claims_by_id(problem)
        claims = resolve_claims(members, member_ids, subscriptions, problem.topics, subscribed, columns, ids)
    owner, conflicted, reported = claims.owner, claims.conflicted, claims.reported
    warnings.extend(claims.warnings)

    groups, cut = _unit_groups(problem, topics, owner, _reads(ids, read, len(names)))
    if cut:
        warnings.append(
            f"{cut} partitions of co-partitioned topics beyond the group's smallest partition "
            "count stay unassigned (KIP-315)"
        )
    owned = sum(int(np.count_nonzero(g.claims >= 0)) for g in groups)
    equal = (
        ids.same_topics(len(names))
        and all(len(g.topics) == 1 for g in groups)
        and not any(g.racks is not None for g in groups)
    )
    return ConsumerIndex(
        members=member_ids,
        subscriptions=subscriptions,
        generations=tuple(map(_GENERATION, members)),
        racks=tuple(map(_RACK, members)),
        groups=tuple(groups),
        topics=topics,
        reported=reported,
        conflicted=conflicted,
        owned=owned,
        equal_subscriptions=equal,
        warnings=tuple(warnings),
    )


def _subscriptions(
    problem: ConsumerProblem, members: list[ConsumerMember], order: list[int], names: list[str], warnings: list[str]
) -> tuple[Sequence[frozenset[str]], SubscriptionIds]:
    """Each member's existing subscribed topics, as names and as numbers (positions in `names`);
    a compact body's numbers are read as given (each topic listed once), else looked up by name."""
    if problem.subscription_ids is not None:
        ids = problem.subscription_ids.members_in(order)
        # a compact body's topics all exist; the names are made only where a solver reads them
        if ids.listed_once(len(names)):
            return SubscribedNames(ids, names), ids
    # members mostly share a subscription: each distinct list is looked at once
    keys = [tuple(m.topics) for m in members]
    existing = frozenset(problem.topics)
    distinct: dict[tuple[str, ...], frozenset[str]] = {}
    for key in dict.fromkeys(keys):
        subscription = frozenset(key)
        # set & set walks the smaller one (the subscription), but most subscriptions need no cut
        distinct[key] = subscription if subscription <= existing else subscription & existing
    missing = sorted(set().union(*distinct) - problem.topics.keys())
    if missing:
        warnings.append(f"subscribed topics with no partitions yet, ignored: {', '.join(missing)}")
    subscriptions = tuple(map(distinct.__getitem__, keys))
    # every subscription as topic numbers, once: the subscribed topics, the claims' check and the
    # readers of each topic all read them
    return subscriptions, SubscriptionIds.of(subscriptions, {t: i for i, t in enumerate(names)})


_ID, _GENERATION, _RACK = attrgetter("id"), attrgetter("generation"), attrgetter("rack")


def id_order(problem: ConsumerProblem) -> list[int]:
    """The members' positions in the request, in id order."""
    return sorted(range(len(problem.members)), key=list(map(_ID, problem.members)).__getitem__)


def claims_by_id(problem: ConsumerProblem) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """The claim columns made while validating, members renumbered in id order."""
    columns = problem.owned_columns
    if columns is None:
        return None
    order = id_order(problem)
    rank = np.empty(len(order), dtype=np.int64)
    rank[order] = np.arange(len(order), dtype=np.int64)
    return rank[columns.member], columns.topic, columns.partition


def _one_claimant(problem: ConsumerProblem, order: list[int] | None = None) -> bool:
    """The claims came as the compact body's dense `owners` alone (one claimant per partition at
    most) from members listed in id order: what claim resolution may read in place, without a
    contest (models/consumer/claims.py). `order`: `id_order(problem)`, when the caller has it."""
    columns = problem.owned_columns
    if columns is None or columns.dense is None:
        return False
    order = id_order(problem) if order is None else order
    return order == list(range(len(order)))  # the ids are unique: in id order is ascending


def _unit_groups(
    problem: ConsumerProblem, topics: dict[str, int], owner: dict[str, np.ndarray], reads: np.ndarray
) -> tuple[list[UnitGroup], int]:
    """The unit groups, `reads` (subscribed topics x members) saying who reads what."""
    joined = [sorted(set(g)) for g in problem.copartitioned]
    in_group = {t for g in joined for t in g}
    shapes = [tuple(g) for g in joined] + [(t,) for t in topics if t not in in_group]
    groups: list[UnitGroup] = []
    cut = 0
    row = {t: i for i, t in enumerate(topics)}
    shared: dict[bytes, tuple[tuple[int, ...], np.ndarray]] = {}
    for shape in sorted(shapes):
        live = tuple(t for t in shape if t in topics)
        if not live:
            continue
        units = min(problem.topics[t] for t in shape)
        cut += sum(topics[t] - units for t in live)
        # groups read by the same members share one tuple (equal subscriptions: all of them)
        if len(live) == 1:
            key = reads[row[live[0]]].tobytes()
            if key not in shared:
                readers = np.flatnonzero(reads[row[live[0]]])
                shared[key] = (tuple(readers.tolist()), readers)
            top = 1 if len(shared[key][1]) else 0
            claims = owner[live[0]][None, :units]
        else:
            weight = reads[[row[t] for t in live]].sum(axis=0)
            top = int(weight.max())
            mask = (weight == top) & (top > 0)
            key = mask.tobytes()
            if key not in shared:
                readers = np.flatnonzero(mask)
                shared[key] = (tuple(readers.tolist()), readers)
            claims = np.stack([owner[t][:units] for t in live]) if units else np.zeros((len(live), 0))
        eligible, eligible_array = shared[key]
        racks = None
        if any(t in problem.partition_racks for t in live):
            racks = tuple(
                tuple(frozenset(r) if r else None for r in problem.partition_racks[t][:units])
                if t in problem.partition_racks
                else (None,) * units
                for t in live
            )
        groups.append(
            UnitGroup(
                topics=live,
                units=units,
                eligible=eligible,
                weight=top,
                claims=claims.astype(np.int64, copy=False),
                racks=racks,
                eligible_array=eligible_array,
            )
        )
    return groups, cut


def _reads(ids: SubscriptionIds, read: np.ndarray, width: int) -> np.ndarray:
    """bool (subscribed topics x members): whether the member reads the topic, from each distinct
    subscription's row (`read`: the subscribed topics' numbers, of `width`)."""
    return np.ascontiguousarray(ids.table(width)[:, read].T)[:, ids.which]


def eligible_masks(index: ConsumerIndex) -> list[np.ndarray]:
    """Per topic group, which members may own its units (a bool mask over the members and the
    no-owner slot); groups read by the same members share one mask (their `eligible` tuple is
    one object)."""
    shared: dict[int, np.ndarray] = {}
    masks: list[np.ndarray] = []
    for group, members in zip(index.groups, index.eligible_ids, strict=True):
        mask = shared.get(id(group.eligible))
        if mask is None:
            mask = shared[id(group.eligible)] = np.zeros(index.member_count + 1, dtype=bool)
            mask[members] = True
        masks.append(mask)
    return masks
