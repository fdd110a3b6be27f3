"""How far a watched group is from what stickyd would give: its busiest member now, and stickyd's
answers (strategy `optimal`, balance `count` and balance `load`) to the group as it is, solved in the
solver processes and stored nowhere.

The problem is the group as its coordinator describes it: every member's subscribed topics (those the
cluster has), each owning its current assignment (a claim at its generation or member epoch, so the
moves are counted from it); partitions weigh their measured records/s as `partition_weights:
"live"` weighs them (a partition without a rate yet weighs its topic's mean rate; a topic without
any rate weighs 0). An answer is kept per group until the watcher's next sample or a change of the
group's assignment, so a page that reloads costs no solve.
"""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import dataclass, field
from typing import Any

from stickyd.client.cluster_reader import GroupState, MemberState
from stickyd.models.cluster import Bottleneck, ClusterComparison, StickydAnswer
from stickyd.service.app_state import Services
from stickyd.service.http.answering import solve_body
from stickyd.service.watch.rates import UNMEASURED, LiveRates
from stickyd.solvers.time_policy import WATCH_COMPARE_TIME_LIMIT_MS

Weights = dict[str, list[int]]
Owned = dict[str, list[int]]


@dataclass
class Comparisons:
    """The newest answer per group, with the problem it answered (the cache key)."""

    kept: dict[str, tuple[str, ClusterComparison]] = field(default_factory=dict)

    def forget_except(self, group_ids: set[str]) -> None:
        for gone in self.kept.keys() - group_ids:
            del self.kept[gone]


def live_weights(rates: LiveRates, partitions: dict[str, int]) -> Weights:
    """topic -> records/s per partition (an unmeasured partition weighs its topic's mean rate,
    rounded down; a topic with no rate at all weighs 0)."""
    weights: Weights = {}
    for topic, count in sorted(partitions.items()):
        measured = list(rates.topics.get(topic, ()))[:count]
        known = [r for r in measured if r != UNMEASURED]
        mean = sum(known) // len(known) if known else 0
        weights[topic] = [
            measured[p] if p < len(measured) and measured[p] != UNMEASURED else mean for p in range(count)
        ]
    return weights


def member_figures(owned: Owned, weights: Weights) -> Bottleneck:
    """What one member owns: its partitions and their records/s."""
    parts = [(t, p) for t, ps in owned.items() if t in weights for p in ps if p < len(weights[t])]
    return Bottleneck(count=len(parts), load=sum(weights[t][p] for t, p in parts))


def bottleneck(figures: list[Bottleneck]) -> Bottleneck:
    return Bottleneck(count=max((f.count for f in figures), default=0), load=max((f.load for f in figures), default=0))


def group_problem(group: GroupState, weights: Weights, balance: str) -> dict[str, Any]:
    """The consumer problem of `group` as it is now, with one `balance`."""
    members = [_member(m, weights) for m in sorted(group.members, key=lambda m: m.member_id)]
    topics = sorted({t for m in members for t in m["topics"]})
    options = {"strategy": "optimal", "balance": balance, "time_limit_ms": WATCH_COMPARE_TIME_LIMIT_MS}
    problem: dict[str, Any] = {"topics": {t: len(weights[t]) for t in topics}, "members": members, "options": options}
    if balance == "load":
        problem["partition_weights"] = {t: weights[t] for t in topics}
    return problem


def _member(member: MemberState, weights: Weights) -> dict[str, Any]:
    entry: dict[str, Any] = {"id": member.member_id, "topics": [t for t in member.subscription if t in weights]}
    owned = {t: ps for t, ps in member.assignment.items() if t in entry["topics"] and ps}
    if owned:
        entry["owned"] = owned
        if member.generation is not None and member.generation >= 0:
            entry["generation"] = member.generation
    return entry


async def compare(
    services: Services,
    cache: Comparisons,
    group: GroupState,
    weights: Weights,
    sampled_at: float | None,
    slots: asyncio.Semaphore,
) -> ClusterComparison:
    """stickyd's two answers to `group`, from the cache when neither the sample nor the group changed;
    at most `slots` solves at a time (the solver processes), so that many groups queue here rather
    than be refused as busy."""
    problems, key = await asyncio.to_thread(_problems, group, weights, sampled_at)  # a large group: CPU work
    kept = cache.kept.get(group.group_id)
    if kept is not None and kept[0] == key:
        return kept[1]
    if not problems["count"]["topics"]:
        found = ClusterComparison(sampled_at=sampled_at, reason="no member subscribes to a topic of the cluster")
    else:
        answers = (_solve(services, slots, problems[b], b, weights) for b in ("count", "load"))
        count, load = await asyncio.gather(*answers)
        reasons = [r for r in (count, load) if isinstance(r, str)]
        found = ClusterComparison(
            sampled_at=sampled_at,
            by_count=count if isinstance(count, StickydAnswer) else None,
            by_load=load if isinstance(load, StickydAnswer) else None,
            reason="; ".join(reasons) or None,
        )
    cache.kept[group.group_id] = (key, found)
    return found


def _problems(group: GroupState, weights: Weights, sampled_at: float | None) -> tuple[dict[str, Any], str]:
    """The two problems, and the cache key: the sample and the load problem (assignment, weights)."""
    problems = {b: group_problem(group, weights, b) for b in ("count", "load")}
    return problems, json.dumps([sampled_at, problems["load"]], sort_keys=True)


async def _solve(
    services: Services, slots: asyncio.Semaphore, problem: dict[str, Any], balance: str, weights: Weights
) -> StickydAnswer | str:
    """stickyd's answer, or why there is none."""
    async with slots:
        result = await solve_body("consumer", problem, time.monotonic(), services)
    if result.status != 200:
        said = json.loads(result.body) if result.body else {}
        return f"balance {balance}: {result.status} {said.get('detail') or said.get('reason') or ''}".strip()
    return await asyncio.to_thread(_answer, result.body, balance, weights)


def _answer(body: bytes, balance: str, weights: Weights) -> StickydAnswer:
    solution = json.loads(body)
    stats = solution["stats"]
    members = {m: member_figures(owned, weights) for m, owned in sorted(solution["assignment"].items())}
    return StickydAnswer(
        balance=balance,  # type: ignore[arg-type]
        bottleneck=bottleneck(list(members.values())),
        moves=stats["moves"],
        solver=stats["solver"],
        optimal=stats["optimal"],
        fallback=stats["fallback"],
        time_ms=stats["time_ms"],
        members=members,
    )
