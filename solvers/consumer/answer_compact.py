"""The consumer answer in the compact encoding (docs/wire-format.md, "The compact encoding"):
members and topics by their index in the request, the assignment as one little-endian int32 per
partition (its member), the few other lists as runs, and the members whose assignment is exactly
what they claimed listed as `unchanged`. Written from integer columns: no Python object per
partition.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import msgspec
import numpy as np

from stickyd.models.consumer.compact import MAGIC, name_order
from stickyd.models.consumer.index import id_order
from stickyd.models.consumer.problem import ConsumerProblem, ConsumerSolution, ConsumerStats, TopicPartitions

Columns = tuple[np.ndarray, np.ndarray, np.ndarray]
"""(member, topic, partition); within one (member, topic) the partitions ascend."""


def request_positions(problem: ConsumerProblem, member_ids: Sequence[str]) -> np.ndarray:
    """Each of `member_ids`' position among the request's members, then -1 (for "nobody")."""
    ids = [m.id for m in problem.members]
    order = id_order(problem)
    if list(map(ids.__getitem__, order)) != list(member_ids):  # not every member, in id order
        at = {m: i for i, m in enumerate(ids)}
        order = [at[m] for m in member_ids]
    return np.array([*order, -1], dtype=np.int64)


def to_request(problem: ConsumerProblem, positions: np.ndarray, names: Sequence[str], columns: Columns) -> Columns:
    """Columns over members and `names` as columns over the request's member and topic order;
    `positions`: the members' positions in the request (`request_positions`)."""
    topic_at = {t: i for i, t in enumerate(problem.topics)}
    topics = np.array([topic_at[t] for t in names] + [-1], dtype=np.int64)
    member, topic, partition = columns
    return positions[member], topics[topic], partition


def runs(columns: Columns) -> bytes:
    """Each stretch of consecutive partitions of one (member, topic) as 4 int32: member, topic,
    first, count."""
    member, topic, partition = columns
    if not len(partition):
        return b""
    starts = np.ones(len(partition), dtype=bool)
    starts[1:] = (member[1:] != member[:-1]) | (topic[1:] != topic[:-1]) | (partition[1:] != partition[:-1] + 1)
    at = np.flatnonzero(starts)
    out = np.empty((len(at), 4), dtype="<i4")
    out[:, 0], out[:, 1], out[:, 2] = member[at], topic[at], partition[at]
    out[:, 3] = np.diff(np.append(at, len(partition)))
    return out.tobytes()


def request_offsets(problem: ConsumerProblem) -> np.ndarray:
    """Where each topic of the request (in its order) starts in a dense owners array."""
    counts = np.fromiter(problem.topics.values(), dtype=np.int64, count=len(problem.topics))
    return np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)


def dense_owners(problem: ConsumerProblem, columns: Columns) -> np.ndarray:
    """Request-order columns as one int32 per partition of every listed topic: the member, or -1."""
    offsets = request_offsets(problem)
    owner = np.full(int(offsets[-1]), -1, dtype="<i4")
    member, topic, partition = columns
    owner[offsets[topic] + partition] = member
    return owner


def unchanged(problem: ConsumerProblem, owner: np.ndarray) -> np.ndarray:
    """The members (request order) whose partitions in `owner` (dense, request terms) are exactly
    the set of partitions they claimed, each claimed once."""
    claims = problem.owned_columns
    members = len(problem.members)
    if claims is None:
        return np.zeros(0, dtype=np.int64)
    dense = claims.dense.request_order if claims.dense is not None else None
    if dense is not None and len(dense) == len(owner):
        # one claimant per partition: a member is unchanged when no partition it claimed or got differs
        differ = dense != owner
        bad = np.zeros(members + 1, dtype=bool)  # the last slot takes -1 (nobody)
        bad[dense[differ]] = True
        bad[owner[differ]] = True
        return np.flatnonzero(~bad[:members])
    offsets = request_offsets(problem)
    counts = np.diff(offsets)
    owner = np.append(owner, -1)  # the last slot: no such partition
    # claims: topic by position in sorted(topics) -> request order
    to_request_topic = name_order(list(problem.topics))
    c_topic = np.where(claims.topic >= 0, to_request_topic[np.maximum(claims.topic, 0)], -1)
    in_range = (c_topic >= 0) & (claims.partition < np.append(counts, 0)[c_topic])
    flat = np.where(in_range, offsets[np.maximum(c_topic, 0)] + claims.partition, len(owner) - 1)
    kept = owner[flat] == claims.member
    bad = np.zeros(members, dtype=bool)
    bad[claims.member[~kept]] = True
    claimed_twice = np.bincount(flat[kept], minlength=len(owner)) > 1
    bad[owner[np.flatnonzero(claimed_twice)]] = True
    given = np.bincount(owner[owner >= 0], minlength=members)
    same_count = np.bincount(claims.member[kept], minlength=members) == given
    return np.flatnonzero(same_count & ~bad)


def encode_answer(
    problem: ConsumerProblem,
    assignment: np.ndarray,
    revoke: Columns,
    target: np.ndarray | None,
    unassigned: Columns,
    stats: ConsumerStats,
) -> bytes:
    """The whole answer: `assignment` and `target` dense (request terms), the rest as columns."""
    document = {
        "assignment": assignment.astype("<i4", copy=False).tobytes(),
        "unchanged": unchanged(problem, assignment).tolist(),
        "revoke": runs(revoke),
        "target": None if target is None else target.astype("<i4", copy=False).tobytes(),
        "unassigned": runs(unassigned),
        "stats": stats.model_dump(mode="json"),
    }
    return MAGIC + msgspec.msgpack.encode(document)


def columns_of_maps(problem: ConsumerProblem, maps: Mapping[str, TopicPartitions]) -> Columns:
    """Nested {member: {topic: partitions}} as request-order columns (the path for answers made
    as maps: small groups and baselines)."""
    member_at = {m.id: i for i, m in enumerate(problem.members)}
    topic_at = {t: i for i, t in enumerate(problem.topics)}
    member: list[int] = []
    topic: list[int] = []
    partition: list[int] = []
    for member_id, per_topic in maps.items():
        for name, parts in per_topic.items():
            ordered = sorted(parts)
            member += [member_at[member_id]] * len(ordered)
            topic += [topic_at[name]] * len(ordered)
            partition += ordered
    return (np.array(member, dtype=np.int64), np.array(topic, dtype=np.int64), np.array(partition, dtype=np.int64))


def encode_solution(problem: ConsumerProblem, solution: ConsumerSolution) -> bytes:
    """Any consumer answer in the compact encoding, read from its maps."""
    unassigned = _unassigned_columns(problem, solution.unassigned)
    target = None if solution.target is None else dense_owners(problem, columns_of_maps(problem, solution.target))
    return encode_answer(
        problem,
        dense_owners(problem, columns_of_maps(problem, solution.assignment)),
        columns_of_maps(problem, solution.revoke),
        target,
        unassigned,
        solution.stats,
    )


def _unassigned_columns(problem: ConsumerProblem, free: TopicPartitions) -> Columns:
    """Unassigned partitions as columns with member -1."""
    topic_at = {t: i for i, t in enumerate(problem.topics)}
    topic = [topic_at[name] for name, parts in free.items() for _ in parts]
    partition = [p for parts in free.values() for p in sorted(parts)]
    member = np.full(len(partition), -1, dtype=np.int64)
    return member, np.array(topic, dtype=np.int64), np.array(partition, dtype=np.int64)
