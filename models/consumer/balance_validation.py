"""What `validate_consumer_solution` checks for balance `per_topic` and `load`.

It does not judge optimality; it checks that what the answer claims is true: `stats.load` figures
measured on the assignment, bounds no higher than the answer itself, and an answer that says it
is optimal meeting what it then must (each topic spread floor/ceil for `per_topic`; the
bottleneck within (1 + load_tolerance) x the proven L*, and the moves equal to their proven
lower bound, for `load`).
"""

from __future__ import annotations

import numpy as np

from stickyd.models.consumer.balance import index_balance, per_topic_bounds
from stickyd.models.consumer.index import ConsumerIndex
from stickyd.models.consumer.problem import ConsumerProblem, ConsumerSolution

RELATIVE = 1e-9
"""figures are floats: two that differ by less than this (relative) are the same figure."""


def balance_violations(
    problem: ConsumerProblem, index: ConsumerIndex, solution: ConsumerSolution, owner: dict[str, np.ndarray]
) -> list[str]:
    """`owner`: topic -> member per partition of the checked assignment (negative: nobody)."""
    balance = problem.options.balance
    stats = solution.stats
    if balance != "load":
        out = ["stats.load: only balance load reports it"] if stats.load is not None else []
        if balance == "per_topic" and stats.optimal:
            out += _per_topic_spread(index, owner)
        return out
    if stats.load is None:
        return ["stats.load: missing (balance load reports the normalized loads)"]
    weights = index_balance(problem, index)
    total = np.zeros(index.member_count, dtype=np.float64)
    for topic, members in owner.items():
        mine = members >= 0
        np.add.at(total, members[mine], weights.weights[topic][mine].astype(np.float64))
    normalized = total / weights.capacity
    figures = stats.load
    out = []
    for name, truth in (("max", float(normalized.max())), ("min", float(normalized.min()))):
        said = getattr(figures, name)
        if not _same(said, truth):
            out.append(f"stats.load.{name}: says {said}, the assignment has {truth}")
    if figures.lower_bound is not None and figures.lower_bound > normalized.max() * (1 + RELATIVE):
        out.append(f"stats.load.lower_bound: {figures.lower_bound} is above the answer's own bottleneck")
    if figures.moves_lower_bound is not None and figures.moves_lower_bound > stats.moves:
        out.append(f"stats.load.moves_lower_bound: {figures.moves_lower_bound} is above the answer's moves")
    if stats.optimal:
        if figures.lower_bound is None or figures.moves_lower_bound is None:
            out.append("stats.optimal: an optimal load answer gives its proven lower_bound and moves_lower_bound")
        else:
            limit = figures.lower_bound * float(1 + weights.tolerance) * (1 + RELATIVE)
            if normalized.max() > limit:
                out.append(
                    f"stats.optimal: the bottleneck {normalized.max()} is above (1 + load_tolerance) x "
                    f"lower_bound {figures.lower_bound}"
                )
            if figures.moves_lower_bound != stats.moves:
                out.append(
                    f"stats.optimal: moves {stats.moves} not proven (moves_lower_bound {figures.moves_lower_bound})"
                )
    return out


def _per_topic_spread(index: ConsumerIndex, owner: dict[str, np.ndarray]) -> list[str]:
    """Balance per_topic, level 1: every eligible member gets floor or ceil of each group's units."""
    out = []
    for group in index.groups:
        if not group.units or not group.eligible:
            continue
        holder = np.stack([owner[t][: group.units] for t in group.topics]).max(axis=0)
        counts = np.bincount(holder[holder >= 0], minlength=index.member_count)[list(group.eligible)]
        low, high = per_topic_bounds(group)
        if counts.min() < low or counts.max() > high:
            out.append(
                f"{group.name}: optimal per_topic answer gives members {counts.min()} to {counts.max()} "
                f"units, not {low} to {high}"
            )
    return out


def _same(a: float, b: float) -> bool:
    return abs(a - b) <= RELATIVE * max(abs(a), abs(b), 1e-300)
