"""The min-cost flow's squared-load arcs (solvers/flows/convex_loads.py): they cover every unit once,
in rising cost; a load is called settled exactly when the arcs' marginals there prove it; the
windows widen until loads settle; and the flow built on them reaches the least sum of squared
loads that an independent flow with one arc per unit finds, on wide unequal subscriptions."""

from __future__ import annotations

import random
import time
from typing import Any

import networkx as nx
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import stickyd.solvers.consumer.flow
from stickyd.models import ConsumerProblem, index_consumer_problem
from stickyd.solvers import solve_consumer
from stickyd.solvers.consumer.classes import build_classes
from stickyd.solvers.consumer.flow import ConsumerFlowModel, solve_min_cost_flow
from stickyd.solvers.flows.convex_loads import CAP_FACTOR, charged, load_segments, settled, widen
from tests.conftest import assert_valid


@st.composite
def windows(draw: st.DrawFn) -> tuple[int, int, int, int]:
    lo = draw(st.integers(0, 40))
    hi = draw(st.integers(lo, lo + 300))
    a = draw(st.integers(lo, hi))
    b = draw(st.integers(a, hi))
    return lo, hi, a, b


def _arcs_per_unit(lo: int, hi: int, a: int, b: int, capped: bool) -> list[int]:
    """k charged for units lo + 1 .. hi, read off the arcs in order."""
    member, capacity, k = load_segments(*(np.array([v], dtype=np.int64) for v in (lo, hi, a, b)), capped=capped)
    assert (member == 0).all()
    return [int(kk) for kk, cap in zip(k.tolist(), capacity.tolist(), strict=True) for _ in range(cap)]


@settings(max_examples=150, deadline=None)
@given(windows(), st.booleans())
def test_arcs_cover_each_unit_once_in_rising_cost_and_exactly_inside_the_window(
    w: tuple[int, int, int, int], capped: bool
) -> None:
    lo, hi, a, b = w
    per_unit = _arcs_per_unit(lo, hi, a, b, capped)
    assert len(per_unit) == hi - lo
    assert per_unit == sorted(per_unit), "costs must rise unit by unit (a convex flow)"
    for unit, k in enumerate(per_unit, start=lo + 1):
        if a < unit <= b:
            assert k == unit, "inside the window every unit is charged its own marginal"
        elif unit <= a:
            assert k >= unit, "below: a segment charges its top unit"
        else:
            assert k <= unit, "above: a segment charges its bottom unit, or the cap's"
            if capped:
                assert k <= max(b + 1, CAP_FACTOR * b), "capped: no more than the cap's marginal"
    units = np.arange(lo + 1, hi + 1, dtype=np.int64)
    if len(units):
        n = len(units)
        got = charged(units, np.full(n, a), np.full(n, b), capped=capped).tolist()
        assert got == per_unit


@settings(max_examples=150, deadline=None)
@given(windows(), st.booleans(), st.data())
def test_settled_is_the_marginal_condition_and_widening_settles(
    w: tuple[int, int, int, int], capped: bool, data: st.DataObject
) -> None:
    lo, hi, a, b = w
    x = data.draw(st.integers(lo, hi))
    per_unit = _arcs_per_unit(lo, hi, a, b, capped)
    # one more unit costs at most the true 2x + 1; one fewer saves at least the true 2x - 1
    more = x == hi or 2 * per_unit[x - lo] - 1 <= 2 * x + 1
    fewer = x == lo or 2 * per_unit[x - lo - 1] - 1 >= 2 * x - 1
    xs, los, his, as_, bs = (np.array([v], dtype=np.int64) for v in (x, lo, hi, a, b))
    assert bool(settled(xs, los, his, as_, bs, capped=capped)[0]) == (more and fewer)
    new_a, new_b = widen(xs, los, his, as_, bs, np.array([False]))
    assert new_a[0] <= a and new_b[0] >= b, "windows never narrow"
    assert bool(settled(xs, los, his, new_a, new_b, capped=capped)[0])


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


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 10**6))
def test_capped_arcs_reach_the_least_squares_of_a_one_arc_per_unit_flow(seed: int) -> None:
    """The general flow with the caps large flows put on the arcs far above a window
    (CAPPED_MIN_UNITS, lowered to 0 here) still reaches the least sum of squared loads."""
    problem = _wide_unequal(seed)
    index = index_consumer_problem(ConsumerProblem.model_validate(problem))
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(stickyd.solvers.consumer.flow, "CAPPED_MIN_UNITS", 0)
        assert ConsumerFlowModel(index, build_classes(index), {}).capped
        answer = solve_min_cost_flow(index, build_classes(index), {}, max_imbalance=0, deadline=time.monotonic() + 60)
    assert sum(x * x for x in answer.loads.tolist()) == _least_squares_by_unit_arcs(problem)


def test_two_members_sharing_a_topic_far_above_every_window_end_even_under_the_cap(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """a and b alone read 1,000 partitions while the share is 85: the first windows end near 86, so
    their loads fall where every capped arc costs the same and the first flow may split them
    unevenly; such loads are not settled, and the widened windows bring them to 500 each."""
    problem = {
        "topics": {"big": 1000, **{f"s{i}": 2 for i in range(10)}},
        "members": [{"id": "a", "topics": ["big"]}, {"id": "b", "topics": ["big"]}]
        + [{"id": f"c{i}", "topics": [f"s{i}"]} for i in range(10)],
    }
    index = index_consumer_problem(ConsumerProblem.model_validate(problem))
    monkeypatch.setattr(stickyd.solvers.consumer.flow, "CAPPED_MIN_UNITS", 0)
    answer = solve_min_cost_flow(index, build_classes(index), {}, max_imbalance=0, deadline=time.monotonic() + 60)
    assert answer.loads.tolist() == [500, 500] + [2] * 10
