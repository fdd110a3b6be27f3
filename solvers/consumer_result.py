"""Turn unit owners into the contract's response: partitions, unassigned, stats, cooperative."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from models.consumer import ConsumerProblem, ConsumerSolution, ConsumerStats, TopicPartitions
from models.consumer_index import ConsumerIndex


@dataclass(frozen=True)
class Outcome:
    """What a solver reports besides the owners."""

    strategy: str
    solver: str
    optimal: bool
    fallback: bool
    warnings: tuple[str, ...] = ()


def expand(index: ConsumerIndex, owners: list[np.ndarray]) -> tuple[list[dict[str, np.ndarray]], TopicPartitions]:
    """Per member, topic -> partitions; and the subscribed partitions nobody gets."""
    n = index.member_count
    per_member: list[dict[str, np.ndarray]] = [{} for _ in range(n)]
    unassigned: dict[str, list[np.ndarray]] = {}
    for group, owner in zip(index.groups, owners, strict=True):
        for topic in group.topics:
            tail = np.arange(group.units, index.topics[topic], dtype=np.int64)
            if len(tail):
                unassigned.setdefault(topic, []).append(tail)
        if group.units == 0:
            continue
        order = np.argsort(owner, kind="stable")
        counts = np.bincount(owner + 1, minlength=n + 1)
        ends = np.cumsum(counts).tolist()
        if counts[0]:
            for topic in group.topics:
                unassigned.setdefault(topic, []).append(order[: ends[0]])
        for m in np.flatnonzero(counts[1:]).tolist():
            units = order[ends[m] : ends[m + 1]]
            for topic in group.topics:
                if topic in index.subscriptions[m]:
                    per_member[m][topic] = units
                else:
                    # KIP-315: the unit's member does not read this topic of the join
                    unassigned.setdefault(topic, []).append(units)
    flat = {t: np.sort(np.concatenate(parts)).tolist() for t, parts in sorted(unassigned.items())}
    return per_member, flat


def kept_count(index: ConsumerIndex, owners: list[np.ndarray]) -> int:
    """Partitions assigned to their resolved claimant."""
    kept = 0
    for group, owner in zip(index.groups, owners, strict=True):
        if group.units:
            kept += int(((group.claims == owner[None, :]) & (group.claims >= 0)).sum())
    return kept


def loads(index: ConsumerIndex, owners: list[np.ndarray]) -> np.ndarray:
    """Partitions per member."""
    n = index.member_count
    total = np.zeros(n, dtype=np.int64)
    for group, owner in zip(index.groups, owners, strict=True):
        # units only ever go to eligible members, who all read `weight` topics of the group
        total += np.bincount(owner[owner >= 0], minlength=n) * group.weight
    return total


def build_solution(
    problem: ConsumerProblem,
    index: ConsumerIndex,
    owners: list[np.ndarray],
    outcome: Outcome,
    time_ms: float,
) -> ConsumerSolution:
    per_member, unassigned = expand(index, owners)
    load = loads(index, owners)
    kept = kept_count(index, owners)
    target = {index.members[m]: _as_lists(per_member[m]) for m in range(index.member_count)}
    stats = ConsumerStats(
        strategy=problem.options.strategy,  # type: ignore[arg-type]
        solver=outcome.solver,
        optimal=outcome.optimal,
        fallback=outcome.fallback,
        moves=index.owned - kept,
        kept=kept,
        owned=index.owned,
        min_load=int(load.min()) if len(load) else 0,
        max_load=int(load.max()) if len(load) else 0,
        time_ms=round(time_ms, 3),
        warnings=[*index.warnings, *outcome.warnings],
    )
    # built here from validated parts: constructed without re-validating a million integers
    if problem.options.protocol == "eager":
        return ConsumerSolution.model_construct(
            assignment=target, revoke={}, target=None, unassigned=unassigned, stats=stats
        )
    revoke, assignment = _cooperative(index, per_member)
    return ConsumerSolution.model_construct(
        assignment=assignment, revoke=revoke, target=target, unassigned=unassigned, stats=stats
    )


def _cooperative(
    index: ConsumerIndex, per_member: list[dict[str, np.ndarray]]
) -> tuple[dict[str, TopicPartitions], dict[str, TopicPartitions]]:
    """KIP-429: a member first gives up what it owns but will not keep; nobody receives a
    partition in the round where someone else still revokes it."""
    revoke: dict[str, TopicPartitions] = {}
    withheld: dict[str, list[np.ndarray]] = {}
    for m, reported in enumerate(index.reported):
        mine: dict[str, np.ndarray] = {}
        for topic, parts in reported.items():
            keep = per_member[m].get(topic, np.zeros(0, dtype=np.int64))
            gone = np.setdiff1d(parts, keep)
            # a partition two members claimed at one generation is revoked from both (Kafka)
            tied = index.conflicted.get(topic)
            if tied is not None and len(tied):
                gone = np.union1d(gone, np.intersect1d(parts, tied))
            if len(gone):
                mine[topic] = gone
                withheld.setdefault(topic, []).append(gone)
        revoke[index.members[m]] = _as_lists(mine)
    blocked = {t: np.unique(np.concatenate(v)) for t, v in withheld.items()}
    assignment: dict[str, TopicPartitions] = {}
    for m in range(index.member_count):
        now = {t: np.setdiff1d(parts, blocked[t]) if t in blocked else parts for t, parts in per_member[m].items()}
        assignment[index.members[m]] = _as_lists(now)
    return revoke, assignment


def _as_lists(parts: dict[str, np.ndarray]) -> TopicPartitions:
    return {t: np.asarray(p).tolist() for t, p in sorted(parts.items()) if len(p)}
