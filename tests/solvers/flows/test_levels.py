"""A min-cost flow solved level by level (solvers/flows/levels.py) reaches the same lexicographic
optimum as one weighted sum of its levels wherever that sum fits in 64-bit costs; the Streams
active flow solved so gives the same balance and active moves as its weighted sum (the standbys
placed after it may differ where the two actives tie at every level of the active flow: the
certificate settles standby moves), and past the size where the sum overflows it still answers
with a proven optimum."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from ortools.sat.python import cp_model

from bench.limit_cases import streams_problem
from stickyd.models.streams.index import index_streams_problem
from stickyd.models.streams.problem import StreamsProblem
from stickyd.models.streams.validation import validate_streams_solution
from stickyd.solvers import solve_streams
from stickyd.solvers.errors import SolverFailure
from stickyd.solvers.flows.levels import fixed_arcs, solve_by_levels
from stickyd.solvers.flows.network import FlowNetwork, costs_fit
from stickyd.solvers.streams.flow import _ActiveWeights, solve_streams_flows
from stickyd.solvers.streams.result import active_moves, balance_excess
from tests.solvers.streams.test_streams import streams_problems

Arc = tuple[int, int, int, int, int, int]
"""tail, head, lower bound, capacity, level-1 cost, level-2 cost."""


@st.composite
def networks(draw: st.DrawFn) -> tuple[int, int, list[Arc]]:
    nodes = draw(st.integers(2, 7))
    amount = draw(st.integers(1, 6))
    node = st.integers(0, nodes - 1)
    arcs = [(0, nodes - 1, 0, amount, 9, 9)]  # always feasible
    for _ in range(draw(st.integers(1, 14))):
        tail, head = draw(node), draw(node)
        if tail == head:
            continue
        lower = draw(st.integers(0, 1))
        arcs.append(
            (tail, head, lower, lower + draw(st.integers(0, 4)), draw(st.integers(-4, 4)), draw(st.integers(-4, 4)))
        )
    return nodes, amount, arcs


def built(nodes: int, amount: int, arcs: list[Arc], costs: list[int]) -> FlowNetwork:
    net = FlowNetwork()
    net.add_nodes(nodes)
    for (tail, head, lower, cap, _, _), cost in zip(arcs, costs, strict=True):
        net.add_arcs(tail, head, cap, cost, lower=lower)
    net.supply(0, amount)
    net.supply(nodes - 1, -amount)
    return net


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(networks())
def test_levels_one_after_the_other_reach_the_weighted_sums_optimum(case: tuple[int, int, list[Arc]]) -> None:
    nodes, amount, arcs = case
    first, second = np.array([a[4] for a in arcs]), np.array([a[5] for a in arcs])
    # a level-1 unit outweighs every level-2 difference a flow can make
    weight = 2 * int(sum(abs(a[5]) * a[3] for a in arcs)) + 1
    try:
        summed = built(nodes, amount, arcs, (first * weight + second).tolist()).solve()
    except SolverFailure:  # lower bounds no flow meets: the levels find none either
        with pytest.raises(SolverFailure):
            solve_by_levels(built(nodes, amount, arcs, first.tolist()), [first, second])
        return
    levels = solve_by_levels(built(nodes, amount, arcs, first.tolist()), [first, second])
    assert (first @ levels, second @ levels) == (first @ summed, second @ summed)
    caps = np.array([a[3] for a in arcs])
    lowers = np.array([a[2] for a in arcs])
    assert ((levels >= lowers) & (levels <= caps)).all()
    net_out = np.bincount([a[0] for a in arcs], levels, nodes) - np.bincount([a[1] for a in arcs], levels, nodes)
    assert net_out[0] == amount and net_out[nodes - 1] == -amount and not net_out[1:-1].any()


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(streams_problems())
def test_the_active_flow_by_levels_equals_its_weighted_sum(problem: dict[str, Any]) -> None:
    index = index_streams_problem(StreamsProblem.model_validate(problem))
    summed, levels = solve_streams_flows(index), solve_streams_flows(index, split_levels=True)
    assert (balance_excess(index, levels), active_moves(index, levels)) == (
        balance_excess(index, summed),
        active_moves(index, summed),
    )


def test_past_the_size_where_the_weighted_sum_overflows_the_flows_still_prove_their_answer() -> None:
    """46k tasks x 1,000 clients (one standby, one client gone): the active flow's weighted sum
    would overflow OR-Tools' 64-bit costs even on its fewest nodes (44k still fits): solved by
    levels, the answer is the flows' and proven optimal (it was the sticky heuristic's)."""
    fits, past = (StreamsProblem.model_validate(streams_problem(t, 1_000)) for t in (44_000, 46_000))
    for parsed, overflows in ((fits, False), (past, True)):
        index = index_streams_problem(parsed)
        weights = _ActiveWeights.for_index(index)
        fewest_nodes = 1 + len(index.subtopologies) * (1 + index.client_count) + 2 * index.client_count + 1
        assert costs_fit(weights.overflow + weights.pressure, fewest_nodes) is not overflows
    solution = solve_streams(
        past.model_copy(update={"options": past.options.model_copy(update={"time_limit_ms": 60_000})})
    )
    assert (solution.stats.solver, solution.stats.optimal, solution.stats.fallback) == ("min-cost-flow", True, False)
    assert validate_streams_solution(past, solution) == []


def arc_ranges(nodes: int, amount: int, arcs: list[Arc], optimum: tuple[int, int]) -> list[tuple[int, int]]:
    """Per arc, its least and most flow over the integer flows optimal for both levels, from a
    plain CP-SAT model of the network."""
    model = cp_model.CpModel()
    x = [model.new_int_var(a[2], a[3], f"x{i}") for i, a in enumerate(arcs)]
    for v in range(nodes):
        out = sum(x[i] for i, a in enumerate(arcs) if a[0] == v) - sum(x[i] for i, a in enumerate(arcs) if a[1] == v)
        model.add(out == (amount if v == 0 else -amount if v == nodes - 1 else 0))
    model.add(sum(a[4] * x[i] for i, a in enumerate(arcs)) == optimum[0])
    model.add(sum(a[5] * x[i] for i, a in enumerate(arcs)) == optimum[1])
    solver = cp_model.CpSolver()
    solver.parameters.num_workers = 1
    ranges = []
    for v in x:
        ends = []
        for sign in (1, -1):
            model.minimize(sign * v)
            assert solver.solve(model) == cp_model.OPTIMAL
            ends.append(solver.value(v))
        ranges.append((ends[0], ends[1]))
    return ranges


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(networks())
def test_the_arcs_held_are_those_every_optimal_flow_agrees_on(case: tuple[int, int, list[Arc]]) -> None:
    nodes, amount, arcs = case
    first, second = np.array([a[4] for a in arcs]), np.array([a[5] for a in arcs])
    net = built(nodes, amount, arcs, first.tolist())
    try:
        flow = solve_by_levels(net, [first, second])
    except SolverFailure:
        return
    held = fixed_arcs(net, [first, second], flow)
    ranges = arc_ranges(nodes, amount, arcs, (int(first @ flow), int(second @ flow)))
    agreed = [low == high for low, high in ranges]
    # every arc held is one they agree on; at its bounds in `flow`, exactly those
    assert all(agree for agree, h in zip(agreed, held.tolist(), strict=True) if h)
    at_bounds = [f in (a[2], a[3]) for f, a in zip(flow.tolist(), arcs, strict=True)]
    assert [h for h, b in zip(held.tolist(), at_bounds, strict=True) if b] == [
        agree for agree, b in zip(agreed, at_bounds, strict=True) if b
    ]
