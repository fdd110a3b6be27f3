"""Why a group's answer is not proven optimal, or not balanced, in words (the plan's `limited_by`).

Empty for a group that is proven optimal with loads at most one apart. Otherwise, in this order:
the fallback and its reason; a baseline strategy asked for; the first level the proof did not
reach (the solver's own warning); or, for a proven optimum that is still unbalanced, what
limits it (subscriptions, co-partitioned joins, `max_imbalance`, capacities).
"""

from __future__ import annotations

from collections.abc import Sequence

from stickyd.models import ConsumerProblem, ConsumerSolution
from stickyd.models.streams.problem import StreamsProblem, StreamsSolution


def _common(strategy: str, optimal: bool, fallback: bool, warnings: Sequence[str]) -> str | None:
    """The reasons both kinds share; None when the answer is a proven optimum."""
    if fallback:
        reason = next((w for w in warnings if w.startswith("fell back")), warnings[0] if warnings else "")
        reason = reason.removeprefix("fell back to ").removeprefix("fell back")
        return f"fell back: {reason or 'the optimal solver gave up'}"
    if strategy != "optimal":
        return f"strategy {strategy!r} asked for: a baseline, not optimised"
    if not optimal:
        first = next((w for w in warnings if "not proven" in w), warnings[0] if warnings else "")
        return f"not proven optimal: {first}" if first else "not proven optimal within the time limit"
    return None


def consumer_limit(problem: ConsumerProblem, solution: ConsumerSolution) -> str:
    s = solution.stats
    said = _common(s.strategy, s.optimal, s.fallback, s.warnings)
    if said is not None or s.max_load - s.min_load <= 1:
        return said or ""
    final = solution.target if solution.target is not None else solution.assignment
    loads = {m.id: sum(len(p) for p in final.get(m.id, {}).values()) for m in problem.members}
    reachable = {m.id: sum(problem.topics.get(t, 0) for t in set(m.topics)) for m in problem.members}
    least = min(loads, key=lambda m: (loads[m], m))
    reason = "proven optimal: subscriptions allow no better"
    joins = [group for group in problem.copartitioned if len(group) > 1]
    widest = max(joins, key=len, default=[])
    if widest and s.max_load - s.min_load <= len(widest):
        reason = f"proven optimal: co-partitioned topics ({', '.join(widest)}) move as units of {len(widest)}"
        reason += " partitions"
    elif loads[least] >= reachable[least]:
        reason += f" ({least} subscribes to {reachable[least]} partition(s) in all and has every one)"
    else:
        busiest = max(loads, key=lambda m: (loads[m], m))
        topics = sorted(set(next(m.topics for m in problem.members if m.id == busiest)))
        named = f"{', '.join(topics[:3])}{'...' if len(topics) > 3 else ''}"
        others = [loads[m.id] for m in problem.members if m.id != busiest and set(m.topics) & set(topics)]
        if others:  # in a proven optimum nobody else who reads them could take one of its partitions
            reason += f" (every other reader of {busiest}'s topics {named} has {min(others)} or more)"
        else:
            reason += f" ({busiest} is the only reader of its topics {named})"
    if joins and not reason.startswith("proven optimal: co-partitioned"):
        reason += "; co-partitioned topics move as one unit"
    if problem.options.max_imbalance > 0:
        reason += f"; max_imbalance {problem.options.max_imbalance} lets loads spread for fewer moves"
    return reason


def streams_limit(problem: StreamsProblem, solution: StreamsSolution) -> str:
    s = solution.stats
    said = _common(s.strategy, s.optimal, s.fallback, s.warnings)
    loads = s.balance.active
    if said is not None or max(loads, default=0) - min(loads, default=0) <= 1:
        return said or ""
    capacities = sorted({c.capacity for c in problem.clients})
    if len(capacities) > 1:
        return f"proven optimal: unequal capacities ({capacities[0]}..{capacities[-1]} threads) set the shares"
    return "proven optimal: the task counts per subtopology and the clients' state allow no better"
