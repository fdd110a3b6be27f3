"""The one definition of a correct consumer answer: `validate_consumer_solution`.

Every test, and the dispatcher before an answer leaves the process, asks this function. It
checks validity (each subscribed partition to exactly one subscriber, joins kept together,
cooperative hand-over safe) and that the stats tell the truth; it does not judge optimality.
"""

from __future__ import annotations

import numpy as np

from stickyd.models.consumer.balance_validation import balance_violations
from stickyd.models.consumer.index import ConsumerIndex, eligible_masks, index_consumer_problem
from stickyd.models.consumer.problem import ConsumerProblem, ConsumerSolution, TopicPartitions


def validate_consumer_solution(
    problem: ConsumerProblem, solution: ConsumerSolution, index: ConsumerIndex | None = None
) -> list[str]:
    """Everything wrong with `solution` as an answer to `problem`; empty when valid."""
    index = index or index_consumer_problem(problem)
    violations: list[str] = []
    target = solution.target if problem.options.protocol == "cooperative" else solution.assignment
    if target is None:
        return ["target: missing for the cooperative protocol"]
    owner = _owner_arrays(index, target, "target" if solution.target is not None else "assignment", violations)
    if violations:
        return violations
    _check_coverage(index, owner, solution.unassigned, violations)
    _check_stats(index, solution, owner, violations)
    violations.extend(balance_violations(problem, index, solution, owner))
    if problem.options.protocol == "cooperative":
        _check_cooperative(index, solution, violations)
    elif solution.revoke or solution.target is not None:
        violations.append("revoke/target: only the cooperative protocol revokes")
    return violations


def _owner_arrays(
    index: ConsumerIndex, answer: dict[str, TopicPartitions], name: str, out: list[str]
) -> dict[str, np.ndarray]:
    """topic -> member index per partition (-1: nobody), checking ranges and duplicates."""
    position = {member: m for m, member in enumerate(index.members)}
    if set(answer) != set(position):
        out.append(f"{name}: members {sorted(set(answer) ^ set(position))} missing or unknown")
        return {}
    owner = {t: np.full(n, -1, dtype=np.int64) for t, n in index.topics.items()}
    for member, parts in answer.items():
        m = position[member]
        for topic, partitions in parts.items():
            where = f"{name}.{member}.{topic}"
            arr = np.asarray(partitions, dtype=np.int64)
            if topic not in index.subscriptions[m]:
                out.append(f"{where}: member does not subscribe to {topic}")
                continue
            if len(arr) and (arr[0] < 0 or arr[-1] >= index.topics[topic] or (np.diff(arr) <= 0).any()):
                out.append(f"{where}: partitions must be sorted, unique and in range")
                continue
            taken = arr[owner[topic][arr] >= 0]
            if len(taken):
                out.append(f"{where}: partitions {taken[:5].tolist()} given to two members")
            owner[topic][arr] = m
    return owner


def _check_coverage(
    index: ConsumerIndex, owner: dict[str, np.ndarray], unassigned: TopicPartitions, out: list[str]
) -> None:
    for topic, parts in unassigned.items():
        if topic not in owner:
            out.append(f"unassigned.{topic}: not a subscribed topic")
            continue
        arr = np.asarray(parts, dtype=np.int64)
        if len(arr) and (owner[topic][arr] >= 0).any():
            out.append(f"unassigned.{topic}: lists partitions that are assigned")
        owner[topic] = owner[topic].copy()
        owner[topic][arr] = -2
    for topic, arr in owner.items():
        lost = np.flatnonzero(arr == -1)
        if len(lost):
            out.append(f"{topic}: partitions {lost[:5].tolist()} neither assigned nor unassigned")
    for g in index.groups:
        # KIP-315: partition p of every joined topic goes to one member, which must be one of
        # those reading the most topics of the join; the rest of the group is unassigned
        rows = np.stack([owner[t][: g.units] for t in g.topics])
        holder = rows.max(axis=0)
        if len(holder) and (holder < 0).any():
            out.append(f"{g.name}: units {np.flatnonzero(holder < 0)[:5].tolist()} given to nobody")
            continue
        split = ((rows != holder[None, :]) & (rows >= 0)).any(axis=0)
        if split.any():
            out.append(f"{g.name}: units {np.flatnonzero(split)[:5].tolist()} split across members")
        eligible = np.zeros(index.member_count, dtype=bool)
        eligible[list(g.eligible)] = True
        if len(holder) and not eligible[holder].all():
            out.append(f"{g.name}: a unit went to a member reading fewer of its topics than others")
        for i, t in enumerate(g.topics):
            if len(holder) and g.units and _reads_unassigned(index, t, holder[rows[i] == -2]):
                out.append(f"unassigned.{t}: lists partitions whose unit's member reads {t}")
            if (owner[t][g.units :] >= 0).any():
                out.append(f"{t}: partitions beyond the join's smallest partition count assigned")


def _check_stats(
    index: ConsumerIndex, solution: ConsumerSolution, owner: dict[str, np.ndarray], out: list[str]
) -> None:
    stats = solution.stats
    kept = 0
    for g in index.groups:
        for i, t in enumerate(g.topics):
            claims = g.claims[i]
            kept += int(((claims >= 0) & (owner[t][: g.units] == claims)).sum())
    loads = np.zeros(index.member_count, dtype=np.int64)
    for arr in owner.values():
        loads += np.bincount(arr[arr >= 0], minlength=index.member_count)
    truth = {
        "owned": index.owned,
        "kept": kept,
        "moves": index.owned - kept,
        "min_load": int(loads.min()),
        "max_load": int(loads.max()),
    }
    for name, value in truth.items():
        if getattr(stats, name) != value:
            out.append(f"stats.{name}: says {getattr(stats, name)}, the assignment has {value}")
    if stats.optimal and stats.fallback:
        out.append("stats: a fallback answer cannot be optimal")


def _check_cooperative(index: ConsumerIndex, solution: ConsumerSolution, out: list[str]) -> None:
    target = solution.target or {}
    revoking: dict[str, set[int]] = {}
    for member, parts in solution.revoke.items():
        if member not in index.members:
            out.append(f"revoke.{member}: unknown member")
            continue
        reported = index.reported[index.members.index(member)]
        for topic, partitions in parts.items():
            mine = set(reported.get(topic, np.zeros(0)).tolist())
            if not set(partitions) <= mine:
                out.append(f"revoke.{member}.{topic}: revokes partitions it does not own")
            revoking.setdefault(topic, set()).update(partitions)
    for member, parts in solution.assignment.items():
        for topic, partitions in parts.items():
            if not set(partitions) <= set(target.get(member, {}).get(topic, [])):
                out.append(f"assignment.{member}.{topic}: not part of the target")
            if set(partitions) & revoking.get(topic, set()):
                out.append(f"assignment.{member}.{topic}: holds partitions still being revoked")


def _reads_unassigned(index: ConsumerIndex, topic: str, holders: np.ndarray) -> bool:
    """Whether a unit's member reads `topic` although its partition is listed unassigned."""
    return any(topic in index.subscriptions[m] for m in np.unique(holders).tolist() if m >= 0)


def _misplaced(owner: np.ndarray, eligible: np.ndarray) -> np.ndarray:
    """Units given to no member or to one outside `eligible` (a mask over the members and the
    no-owner slot, last), an index that is no member's among them."""
    members = len(eligible) - 1
    if len(owner) and (int(owner.min()) < -1 or int(owner.max()) >= members):
        owner = np.where((owner >= 0) & (owner < members), owner, -1)
    return np.flatnonzero(~eligible[owner])


def unit_violations(index: ConsumerIndex, owners: list[np.ndarray]) -> list[str]:
    """The cheap run-time check, on units before they are expanded into partitions: every
    unit goes to exactly one member that reads the most topics of its group."""
    out: list[str] = []
    if len(owners) != len(index.groups):
        return [f"{len(owners)} owner arrays for {len(index.groups)} topic groups"]
    for group, owner, eligible in zip(index.groups, owners, eligible_masks(index), strict=True):
        if len(owner) != group.units:
            out.append(f"{group.name}: {len(owner)} owners for {group.units} units")
            continue
        wrong = _misplaced(owner, eligible) if group.eligible else np.zeros(0, np.int64)
        if len(wrong):
            out.append(f"{group.name}: units {wrong[:5].tolist()} given to no member or one that cannot read them")
    return out
