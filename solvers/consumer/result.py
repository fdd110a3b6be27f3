"""Turn unit owners into the contract's response: partitions, unassigned, stats, cooperative."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from stickyd.models.consumer.index import ConsumerIndex
from stickyd.models.consumer.problem import ConsumerProblem, ConsumerSolution, ConsumerStats, TopicPartitions
from stickyd.solvers.consumer.answer_compact import (
    dense_owners,
    encode_answer,
    request_offsets,
    request_positions,
    to_request,
)
from stickyd.solvers.consumer.answer_json import Columns, json_name, nested_json, topic_lists_json
from stickyd.solvers.consumer.lazy_solution import LazyConsumerSolution
from stickyd.solvers.consumer.quick_fill import small_int
from stickyd.solvers.outcome import Outcome


@dataclass(frozen=True)
class Placement:
    """Who gets each subscribed partition, as columns over `index.topics` laid end to end."""

    owner: np.ndarray
    """flat over the subscribed topics (sorted), partition by partition: member, or -1 (unassigned)."""
    offsets: np.ndarray
    """where each subscribed topic starts in `owner`."""
    names: tuple[str, ...]


def place(index: ConsumerIndex, owners: list[np.ndarray]) -> Placement:
    """Unit owners spread over partitions: partition p of each topic of a unit goes to the unit's
    member when it reads that topic; the rest (KIP-315 remainders) stays unassigned."""
    names = tuple(index.topics)
    row = {t: i for i, t in enumerate(names)}
    counts = np.array([index.topics[t] for t in names], dtype=np.int64)
    offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    owner = np.full(int(offsets[-1]), -1, dtype=np.int64)
    for group, units in zip(index.groups, owners, strict=True):
        for topic in group.topics:
            start = int(offsets[row[topic]])
            if len(group.topics) == 1:
                owner[start : start + group.units] = units
                continue
            # KIP-315: the unit's member may not read this topic of the join
            reads = np.array([topic in s for s in index.subscriptions] + [False], dtype=bool)
            owner[start : start + group.units] = np.where(reads[units], units, -1)
    return Placement(owner, offsets, names)


def columns_of(placement: Placement) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(member, topic, partition) of every assigned partition, sorted in that order."""
    assigned = np.flatnonzero(placement.owner >= 0)
    members = int(placement.owner.max()) + 1 if len(placement.owner) else 0
    order = assigned[np.argsort(placement.owner[assigned].astype(small_int(members)), kind="stable")]
    topics = len(placement.offsets) - 1
    # each partition's topic read from one table rather than searched for
    topic_of = np.repeat(np.arange(topics, dtype=small_int(topics)), np.diff(placement.offsets))
    topic = topic_of[order].astype(np.int64)
    return placement.owner[order], topic, order - placement.offsets[topic]


def nested(
    member_ids: tuple[str, ...], names: tuple[str, ...], columns: tuple[np.ndarray, np.ndarray, np.ndarray]
) -> dict[str, TopicPartitions]:
    """{member: {topic: partitions}} for every member, from sorted columns: one Python list per
    (member, topic), built by slicing one list of all partition numbers."""
    member, topic, partition = columns
    n = len(member)
    breaks = np.flatnonzero((member[1:] != member[:-1]) | (topic[1:] != topic[:-1])) + 1
    starts = np.concatenate([[0], breaks]).astype(np.int64) if n else np.zeros(0, np.int64)
    ends = np.append(breaks, n).tolist() if n else []
    numbers = partition.tolist()
    lists = [numbers[a:b] for a, b in zip(starts.tolist(), ends, strict=True)]
    keys = list(map(names.__getitem__, topic[starts].tolist()))
    bounds = np.searchsorted(member[starts], np.arange(len(member_ids) + 1)).tolist()
    return {
        member_id: dict(zip(keys[bounds[m] : bounds[m + 1]], lists[bounds[m] : bounds[m + 1]], strict=True))
        for m, member_id in enumerate(member_ids)
    }


def unassigned_lists(placement: Placement) -> TopicPartitions:
    free = np.flatnonzero(placement.owner < 0)
    topic = np.searchsorted(placement.offsets, free, side="right") - 1
    out: TopicPartitions = {}
    for t in np.unique(topic).tolist():
        here = free[topic == t]
        out[placement.names[t]] = (here - placement.offsets[t]).tolist()
    return out


def kept_count(index: ConsumerIndex, owners: list[np.ndarray]) -> int:
    """Partitions assigned to their resolved claimant."""
    kept = 0
    for group, owner in zip(index.groups, owners, strict=True):
        if group.units:
            kept += int(((group.claims == owner[None, :]) & (group.claims >= 0)).sum())
    return kept


def loads(index: ConsumerIndex, placement: Placement) -> np.ndarray:
    """Partitions per member, counted on the placement (a KIP-315 unit's partitions are there
    already, on the topics of the join its member reads)."""
    # unassigned partitions (-1) land in a first slot, cut off
    return np.bincount(placement.owner + 1, minlength=index.member_count + 1)[1:]


def build_solution(
    problem: ConsumerProblem,
    index: ConsumerIndex,
    owners: list[np.ndarray],
    outcome: Outcome,
    time_ms: float,
) -> ConsumerSolution:
    """The answer with its stats; the partition maps are made from the columns on first use."""
    placement = place(index, owners)
    load = loads(index, placement)
    kept = kept_count(index, owners)
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
    stats._fallback_cause = outcome.fallback_cause
    cooperative = problem.options.protocol == "cooperative"
    return LazyConsumerSolution.of(
        stats,
        lambda: answer_maps(index, placement, cooperative),
        lambda final_stats: answer_json(index, placement, cooperative, final_stats),
        lambda final_stats: answer_compact(problem, index, placement, cooperative, final_stats),
    )


def answer_maps(index: ConsumerIndex, placement: Placement, cooperative: bool) -> dict[str, object]:
    """assignment, revoke, target and unassigned as the contract's nested maps."""
    columns = columns_of(placement)
    target = nested(index.members, placement.names, columns)
    unassigned = unassigned_lists(placement)
    if not cooperative:
        return {"assignment": target, "revoke": {}, "target": None, "unassigned": unassigned}
    revoke, now = _cooperative(index, placement, columns)
    assignment = nested(index.members, placement.names, now)
    return {
        "assignment": assignment,
        "revoke": nested(index.members, index.reported.topic_names, revoke),
        "target": target,
        "unassigned": unassigned,
    }


def answer_json(index: ConsumerIndex, placement: Placement, cooperative: bool, stats: ConsumerStats) -> bytes:
    """The whole answer as the contract's JSON bytes (the same document `answer_maps` and the
    stats dump to), written from the columns."""
    members = [json_name(m) for m in index.members]
    names = [json_name(t) for t in placement.names]
    columns = columns_of(placement)
    target = nested_json(members, names, columns)
    free = np.flatnonzero(placement.owner < 0)
    free_topic = np.searchsorted(placement.offsets, free, side="right") - 1
    unassigned = topic_lists_json(names, free_topic, free - placement.offsets[free_topic])
    if cooperative:
        revoke, now = _cooperative(index, placement, columns)
        reported_names = [json_name(t) for t in index.reported.topic_names]
        fields = (nested_json(members, names, now), nested_json(members, reported_names, revoke), target)
    else:
        fields = (target, b"{}", b"null")
    return b"".join(
        (
            b'{"assignment":',
            fields[0],
            b',"revoke":',
            fields[1],
            b',"target":',
            fields[2],
            b',"unassigned":',
            unassigned,
            b',"stats":',
            stats.model_dump_json().encode(),
            b"}",
        )
    )


def answer_compact(
    problem: ConsumerProblem, index: ConsumerIndex, placement: Placement, cooperative: bool, stats: ConsumerStats
) -> bytes:
    """The whole answer in the compact encoding (solvers/consumer/answer_compact.py), from the columns."""
    positions = request_positions(problem, index.members)
    to_member = positions.astype(np.int32)
    topic_at = {t: i for i, t in enumerate(problem.topics)}
    offsets = request_offsets(problem)
    # placement's flat order (subscribed topics by name) -> the request's topic order
    owners = to_member[placement.owner]
    target = np.full(int(offsets[-1]), -1, dtype="<i4")
    # one topic's partitions are contiguous in both orders: a slice copy per topic
    for t, a, b in zip(placement.names, placement.offsets[:-1].tolist(), placement.offsets[1:].tolist(), strict=True):
        start = int(offsets[topic_at[t]])
        target[start : start + b - a] = owners[a:b]
    free = np.flatnonzero(placement.owner < 0)
    free_topic = np.searchsorted(placement.offsets, free, side="right") - 1
    nobody = np.full(len(free), len(index.members), dtype=np.int64)
    unassigned = to_request(
        problem, positions, placement.names, (nobody, free_topic, free - placement.offsets[free_topic])
    )
    if not cooperative:
        nothing = np.zeros(0, dtype=np.int64)
        return encode_answer(problem, target, (nothing, nothing, nothing), None, unassigned, stats)
    revoke, now = _cooperative(index, placement, columns_of(placement))
    return encode_answer(
        problem,
        dense_owners(problem, to_request(problem, positions, placement.names, now)),
        to_request(problem, positions, index.reported.topic_names, revoke),
        target,
        unassigned,
        stats,
    )


def _cooperative(index: ConsumerIndex, placement: Placement, columns: Columns) -> tuple[Columns, Columns]:
    """KIP-429: a member first gives up what it owns but will not keep; nobody receives a
    partition in the round where someone else still revokes it. Returns the revoked claims
    (over `index.reported.topic_names`) and the assignment of this round (over the subscribed
    topics), as sorted columns."""
    reported = index.reported
    # reported topics are all existing topics; map them onto the subscribed ones (or -1)
    row = {t: i for i, t in enumerate(placement.names)}
    to_subscribed = np.array([row.get(t, -1) for t in reported.topic_names], dtype=np.int64)
    sub_topic = to_subscribed[reported.topic]
    flat = np.where(sub_topic >= 0, placement.offsets[np.maximum(sub_topic, 0)] + reported.partition, -1)
    # one sentinel at the end: index -1 (not a subscribed partition) reads "nobody", "not tied"
    target_owner = np.append(placement.owner, -1)[flat]
    tied = np.zeros(len(placement.owner) + 1, dtype=bool)
    for name, parts in index.conflicted.items():
        if name in row:
            tied[placement.offsets[row[name]] + parts] = True
    # a partition two members claimed at one generation is revoked from both (Kafka)
    gone = (target_owner != reported.member) | tied[flat]
    revoke = (reported.member[gone], reported.topic[gone], reported.partition[gone])
    blocked = np.zeros(len(placement.owner), dtype=bool)
    blocked[flat[gone & (flat >= 0)]] = True
    member, topic, partition = columns
    now = ~blocked[placement.offsets[topic] + partition]
    return revoke, (member[now], topic[now], partition[now])
