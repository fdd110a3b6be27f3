"""The min-cost flow's squared-load arcs (solvers/flows/convex_loads.py): they cover every unit once,
in rising cost; a load is called settled exactly when the arcs' marginals there prove it; the
windows widen until loads settle; and the flow built on them reaches the least sum of squared
loads that an independent flow with one arc per unit finds, on wide unequal subscriptions."""

from __future__ import annotations

import random
from typing import Any

import networkx as nx
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from stickyd.solvers import solve_consumer
from stickyd.solvers.flows.convex_loads import charged, load_segments, settled, widen
from tests.conftest import assert_valid


@st.composite
def windows(draw: st.DrawFn) -> tuple[int, int, int, int]:
    lo = draw(st.integers(0, 40))
    hi = draw(st.integers(lo, lo + 300))
    a = draw(st.integers(lo, hi))
    b = draw(st.integers(a, hi))
    return lo, hi, a, b


def _arcs_per_unit(lo: int, hi: int, a: int, b: int) -> list[int]:
    """k charged for units lo + 1 .. hi, read off the arcs in order."""
    member, capacity, k = load_segments(*(np.array([v], dtype=np.int64) for v in (lo, hi, a, b)))
    assert (member == 0).all()
    return [int(kk) for kk, cap in zip(k.tolist(), capacity.tolist(), strict=True) for _ in range(cap)]


@settings(max_examples=150, deadline=None)
@given(windows())
def test_arcs_cover_each_unit_once_in_rising_cost_and_exactly_inside_the_window(w: tuple[int, int, int, int]) -> None:
    lo, hi, a, b = w
    per_unit = _arcs_per_unit(lo, hi, a, b)
    assert len(per_unit) == hi - lo
    assert per_unit == sorted(per_unit), "costs must rise unit by unit (a convex flow)"
    for unit, k in enumerate(per_unit, start=lo + 1):
        if a < unit <= b:
            assert k == unit, "inside the window every unit is charged its own marginal"
        elif unit <= a:
            assert k >= unit, "below: a segment charges its top unit"
        else:
            assert k <= unit, "above: a segment charges its bottom unit"
    units = np.arange(lo + 1, hi + 1, dtype=np.int64)
    if len(units):
        n = len(units)
        got = charged(units, np.full(n, a), np.full(n, b)).tolist()
        assert got == per_unit


@settings(max_examples=150, deadline=None)
@given(windows(), st.data())
def test_settled_is_the_marginal_condition_and_widening_settles(
    w: tuple[int, int, int, int], data: st.DataObject
) -> None:
    lo, hi, a, b = w
    x = data.draw(st.integers(lo, hi))
    per_unit = _arcs_per_unit(lo, hi, a, b)
    # one more unit costs at most the true 2x + 1; one fewer saves at least the true 2x - 1
    more = x == hi or 2 * per_unit[x - lo] - 1 <= 2 * x + 1
    fewer = x == lo or 2 * per_unit[x - lo - 1] - 1 >= 2 * x - 1
    xs, los, his, as_, bs = (np.array([v], dtype=np.int64) for v in (x, lo, hi, a, b))
    assert bool(settled(xs, los, his, as_, bs)[0]) == (more and fewer)
    new_a, new_b = widen(xs, los, his, as_, bs, np.array([False]))
    assert new_a[0] <= a and new_b[0] >= b, "windows never narrow"
    assert bool(settled(xs, los, his, new_a, new_b)[0])


def _least_squares_by_unit_arcs(problem: dict[str, Any]) -> int:
    """Independent reference: topics -> readers -> sink with one arc per unit (cost 2k - 1)."""
    graph = nx.DiGraph()
    total = sum(problem["topics"].values())
    graph.add_node("source", demand=-total)
    graph.add_node("sink", demand=total)
    for topic, count in problem["topics"].items():
        graph.add_edge("source", topic, capacity=count, weight=0)
    for member in problem["members"]:
        reach = sum(problem["topics"][t] for t in member["topics"])
        for t in member["topics"]:
            graph.add_edge(t, member["id"], capacity=problem["topics"][t], weight=0)
        for k in range(1, reach + 1):
            graph.add_edge(member["id"], ("unit", member["id"], k), capacity=1, weight=2 * k - 1)
            graph.add_edge(("unit", member["id"], k), "sink", capacity=1, weight=0)
    return int(nx.min_cost_flow_cost(graph))


def _wide_unequal(seed: int) -> dict[str, Any]:
    """Cohorts reading overlapping slices of many topics, some members far below the mean."""
    rng = random.Random(seed)
    counts = {f"t{i:02d}": rng.choice((1, 3, 8, 16, 32)) for i in range(rng.randint(8, 24))}
    names = sorted(counts)
    cohorts = [sorted(rng.sample(names, rng.randint(1, len(names)))) for _ in range(rng.randint(2, 4))]
    members = [{"id": f"m{i:02d}", "topics": cohorts[i % len(cohorts)]} for i in range(rng.randint(3, 14))]
    read = {t for member in members for t in member["topics"]}
    return {"topics": {t: c for t, c in counts.items() if t in read}, "members": members}


@settings(max_examples=20, deadline=None)
@given(st.integers(0, 10**6))
def test_flow_reaches_the_least_squares_of_a_one_arc_per_unit_flow(seed: int) -> None:
    problem = _wide_unequal(seed)
    solution = solve_consumer(problem)
    assert_valid(problem, solution)
    # cohorts can draw the same topics: equal subscriptions are solved directly (also proven)
    assert solution.stats.optimal and solution.stats.solver in ("min-cost-flow", "direct-equal"), solution.stats
    loads = [sum(len(p) for p in parts.values()) for parts in solution.assignment.values()]
    assert sum(x * x for x in loads) == _least_squares_by_unit_arcs(problem)
