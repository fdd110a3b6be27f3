"""Tiny consumer groups solved with plain Python lists: the general path's answers, without numpy.

The general path is built for a million partitions: about 150 small numpy calls per solve, which
for a 100-partition group are almost all per-call overhead (about 2 ms of CPU a request). For a
group in the scope below, this module runs the same steps on lists:

- the index (solvers/consumer/small/index.py): members by id, one unit per partition, a topic's
  readers as its eligible members, claims resolved by stickyd.models.consumer.claims;
- equal subscriptions: stickyd.solvers.consumer.equal's quotas and fill, member by member;
- otherwise stickyd.solvers.consumer.flow's network arc for arc, in the same order (solvers/
  consumer_tiny_flow.py), given to OR-Tools' min-cost flow, with the same load windows, the same
  proof that the windows' marginals are exact (`settled`) and the same dealing of units;
- the answer's bytes laid out as stickyd.solvers.consumer.result writes them.

The same network in the same order gives OR-Tools the same problem, so the answers are the
general path's byte for byte (tests/solvers/consumer/test_small_groups.py compares them on random small
groups). Scope: strategy optimal, max_imbalance 0, no co-partitioned topics, no partition racks,
at most TINY_PARTITIONS partitions and TINY_MEMBERS members, and (cooperative protocol) no
claims. Outside it, or when the budget is spent, a check fails or the flow does not settle,
`solve_tiny` returns None and the general path answers (and falls back as it always does).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import orjson

from stickyd.models.consumer.problem import ConsumerProblem, ConsumerStats
from stickyd.solvers.consumer.lazy_solution import LazyConsumerSolution
from stickyd.solvers.consumer.small.flow import flow_owners
from stickyd.solvers.consumer.small.index import TinyIndex, claims_any, tiny_index

TINY_PARTITIONS = 2_000
"""most partitions (all topics of the request) a tiny solve takes."""
TINY_MEMBERS = 200
"""most members a tiny solve takes."""


def fits(problem: ConsumerProblem) -> bool:
    """Whether `problem` is in this module's scope (see the module's docstring)."""
    options = problem.options
    return (
        options.strategy == "optimal"
        and options.max_imbalance == 0
        and not problem.copartitioned
        and not problem.partition_racks
        and len(problem.members) <= TINY_MEMBERS
        and sum(problem.topics.values()) <= TINY_PARTITIONS
        and (options.protocol == "eager" or not claims_any(problem))
    )


def solve_tiny(
    problem: ConsumerProblem, deadline_for: Callable[[int], float], started: float
) -> LazyConsumerSolution | None:
    """The general path's answer to `problem` (which `fits`), or None to let it answer. The flow
    stops at `deadline_for(subscribed partitions)` (monotonic) as the general one does;
    `started` is when the solve began (stats.time_ms)."""
    index = tiny_index(problem)
    if index.equal:
        owners: list[list[int]] | None = equal_owners(index)
        solver = "direct-equal"
    else:
        owners = flow_owners(index, deadline_for(sum(index.topics.values())))
        solver = "min-cost-flow"
    if owners is None or not _valid(index, owners):
        return None
    return _solution(problem, index, owners, solver, started)


def equal_owners(index: TinyIndex) -> list[list[int]]:
    """stickyd.solvers.consumer.equal on lists: quotas floor/ceil(P/M), the larger ones first to members
    owning at least ceil(P/M) (then by id); each member keeps its lowest owned partitions up to
    its quota; the rest fills the members below quota in id order."""
    n = len(index.members)
    claims = [c for topic in index.names for c in index.claims[topic]]
    total = len(claims)
    mine: list[list[int]] = [[] for _ in range(n)]
    for position, claimant in enumerate(claims):
        if claimant >= 0:
            mine[claimant].append(position)
    base, extra = divmod(total, n)
    quota = [base] * n
    for m in sorted(range(n), key=lambda m: (len(mine[m]) < base + 1, m))[:extra]:
        quota[m] += 1
    owners = [-1] * total
    short: list[int] = []
    for m in range(n):
        keep = min(len(mine[m]), quota[m])
        for position in mine[m][:keep]:
            owners[position] = m
        short += [m] * (quota[m] - keep)
    free = (p for p, owner in enumerate(owners) if owner < 0)
    for position, m in zip(free, short, strict=False):
        owners[position] = m
    return _split(owners, [index.topics[t] for t in index.names])


def _split(flat: list[int], sizes: list[int]) -> list[list[int]]:
    out, at = [], 0
    for size in sizes:
        out.append(flat[at : at + size])
        at += size
    return out


def _valid(index: TinyIndex, owners: list[list[int]]) -> bool:
    """stickyd.models.consumer.validation.unit_violations: every unit goes to one of its topic's readers."""
    if len(owners) != len(index.names):
        return False
    for topic, owner in zip(index.names, owners, strict=True):
        readers = index.reader_set[topic]
        if len(owner) != index.topics[topic] or not all(m in readers for m in owner):
            return False
    return True


def _solution(
    problem: ConsumerProblem, index: TinyIndex, owners: list[list[int]], solver: str, started: float
) -> LazyConsumerSolution:
    """stickyd.solvers.consumer.result.build_solution and answer_json for plain topics."""
    n = len(index.members)
    target: dict[str, dict[str, list[int]]] = {m: {} for m in index.members}
    by_number = list(target.values())
    unassigned: dict[str, list[int]] = {}
    load = [0] * n
    kept = 0
    for topic, owner in zip(index.names, owners, strict=True):
        claims = index.claims[topic]
        for p, m in enumerate(owner):
            if m < 0:
                unassigned.setdefault(topic, []).append(p)
                continue
            by_number[m].setdefault(topic, []).append(p)
            load[m] += 1
            if claims[p] == m:
                kept += 1
    stats = ConsumerStats(
        strategy=problem.options.strategy,
        solver=solver,
        optimal=True,
        fallback=False,
        moves=index.owned - kept,
        kept=kept,
        owned=index.owned,
        min_load=min(load),
        max_load=max(load),
        time_ms=round((time.monotonic() - started) * 1000, 3),
        warnings=list(index.warnings),
    )
    cooperative = problem.options.protocol == "cooperative"
    # in scope, a cooperative request claims nothing: nothing to revoke, this round gets the target
    revoke: dict[str, Any] = {m: {} for m in index.members} if cooperative else {}
    maps = {"assignment": target, "revoke": revoke, "target": target if cooperative else None, "unassigned": unassigned}

    def write(final: ConsumerStats) -> bytes:
        target_json = orjson.dumps(target)
        return b"".join(
            (
                b'{"assignment":',
                target_json,
                b',"revoke":',
                orjson.dumps(revoke),
                b',"target":',
                target_json if cooperative else b"null",
                b',"unassigned":',
                orjson.dumps(unassigned),
                b',"stats":',
                final.model_dump_json().encode(),
                b"}",
            )
        )

    return LazyConsumerSolution.of(stats, lambda: maps, write)
