"""stickyd.models.consumer.index for a tiny group of plain topics, as lists (solvers/consumer/small/solve.py).

Plain topics only (no co-partitioning, no racks): every partition is its own unit, a topic's
eligible members are the members reading it, in id order. Claims are resolved by
stickyd.models.consumer.claims (KIP-341, the same code and warnings as the general index) when any member
owns something.
"""

from __future__ import annotations

from dataclasses import dataclass

from stickyd.models.consumer.claims import resolve_claims
from stickyd.models.consumer.index import claims_by_id
from stickyd.models.consumer.problem import ConsumerProblem


@dataclass(frozen=True)
class TinyIndex:
    members: tuple[str, ...]
    """member ids, sorted: index i is member i everywhere."""
    topics: dict[str, int]
    """subscribed, existing topics (sorted) and their partition counts."""
    names: tuple[str, ...]
    """`topics`' names, sorted: one unit group each, in this order."""
    readers: dict[str, tuple[int, ...]]
    """topic -> members reading it, ascending (the group's eligible members)."""
    reader_set: dict[str, frozenset[int]]
    claims: dict[str, list[int]]
    """topic -> resolved claimant of each partition, or -1."""
    owned: int
    equal: bool
    """every member reads the same topics (the direct-equal solver answers)."""
    warnings: tuple[str, ...]


def tiny_index(problem: ConsumerProblem) -> TinyIndex:
    members = sorted(problem.members, key=lambda m: m.id)
    member_ids = tuple(m.id for m in members)
    warnings: list[str] = []
    missing = sorted(set().union(*(m.topics for m in members)) - problem.topics.keys())
    if missing:
        warnings.append(f"subscribed topics with no partitions yet, ignored: {', '.join(missing)}")
    subscriptions = tuple(frozenset(m.topics).intersection(problem.topics) for m in members)
    names = tuple(sorted(set().union(*subscriptions)))
    topics = {t: problem.topics[t] for t in names}
    readers: dict[str, list[int]] = {t: [] for t in names}
    for m, subs in enumerate(subscriptions):
        for t in subs:
            readers[t].append(m)
    if claims_any(problem):
        resolution = resolve_claims(members, member_ids, subscriptions, problem.topics, names, claims_by_id(problem))
        claims = {t: resolution.owner[t].tolist() for t in names}
        warnings.extend(resolution.warnings)
    else:
        claims = {t: [-1] * count for t, count in topics.items()}
    return TinyIndex(
        members=member_ids,
        topics=topics,
        names=names,
        readers={t: tuple(r) for t, r in readers.items()},
        reader_set={t: frozenset(r) for t, r in readers.items()},
        claims=claims,
        owned=sum(1 for t in names for c in claims[t] if c >= 0),
        equal=len(set(subscriptions)) == 1,
        warnings=tuple(warnings),
    )


def claims_any(problem: ConsumerProblem) -> bool:
    """Whether any member claims a partition (from the claim columns when validation made them:
    an `owned` map kept as bytes is not decoded to look)."""
    columns = problem.owned_columns
    return len(columns.member) > 0 if columns is not None else any(m.owned for m in problem.members)
