"""The even split found by a max flow at the moves' lower bound (solvers/flows/even_moves.py): when
it answers, every member ends with the even share or one more and the answer moves exactly as many
partitions as the min-cost flow's even split (the exact reference: costs, not a bound); when no even
split meets the bound it declines, and the min-cost flow answers with more moves."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from stickyd.models import ConsumerProblem, index_consumer_problem
from stickyd.solvers.consumer.classes import build_classes
from stickyd.solvers.consumer.flow import ConsumerFlowModel, FlowAnswer
from stickyd.solvers.consumer.result import build_solution
from stickyd.solvers.outcome import Outcome
from tests.conftest import assert_valid


@st.composite
def unequal_groups(draw: st.DrawFn) -> dict[str, Any]:
    """Unequal subscriptions, each partition held by one member (subscribed or not) or by nobody."""
    topics = {f"t{i}": draw(st.integers(0, 8)) for i in range(draw(st.integers(1, 4)))}
    names = list(topics)
    members: list[dict[str, Any]] = [
        {"id": f"m{i}", "topics": draw(st.lists(st.sampled_from(names), min_size=1, unique=True)), "owned": {}}
        for i in range(draw(st.integers(1, 6)))
    ]
    for topic, count in topics.items():
        for p in range(count):
            holder = draw(st.integers(-1, len(members) - 1))
            if holder >= 0:
                members[holder]["owned"].setdefault(topic, []).append(p)
    return {"topics": topics, "members": members}


def _model(problem: dict[str, Any]) -> tuple[ConsumerProblem, ConsumerFlowModel, int]:
    model = ConsumerProblem.model_validate(problem)
    index = index_consumer_problem(model)
    flow = ConsumerFlowModel(index, build_classes(index), {})
    live = int((flow.capacity > 0).sum())
    return model, flow, flow.total_units // max(live, 1)


def _moves(model: ConsumerProblem, flow: ConsumerFlowModel, answer: FlowAnswer) -> int:
    outcome = Outcome(strategy="optimal", solver="min-cost-flow", optimal=True)
    solution = build_solution(model, flow.index, answer.owners, outcome, 0.0)
    assert_valid(model, solution)
    return solution.stats.moves


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(unequal_groups())
def test_at_the_bound_the_max_flow_moves_as_few_as_the_min_cost_even_split(problem: dict[str, Any]) -> None:
    model, flow, share = _model(problem)
    live = flow.capacity > 0
    if not live.any() or (flow.capacity[live] < share).any():
        return  # no even split to look for
    at_bound = flow.solve_even_at_bound(share)
    if at_bound is None:
        return
    loads = at_bound.loads[live]
    assert loads.min() >= share and loads.max() <= share + 1
    assert int(at_bound.loads.sum()) == flow.total_units
    assert _moves(model, flow, at_bound) == _moves(model, flow, flow.solve_even(share, 0))


def test_a_member_holding_too_many_gives_up_one_partition_to_the_member_short_of_one() -> None:
    problem: dict[str, Any] = {
        "topics": {"a": 3, "b": 3},
        "members": [
            {"id": "m1", "topics": ["a", "b"], "owned": {"a": [0, 1], "b": [0]}},
            {"id": "m2", "topics": ["a"], "owned": {"a": [2]}},
            {"id": "m3", "topics": ["b"], "owned": {"b": [1, 2]}},
        ],
    }
    model, flow, share = _model(problem)
    answer = flow.solve_even_at_bound(share)
    assert answer is not None
    assert answer.loads.tolist() == [2, 2, 2]
    assert _moves(model, flow, answer) == 1


def test_a_split_that_needs_a_chain_of_give_ups_is_left_to_the_min_cost_flow() -> None:
    """m1 must give up a partition of b, which only m3 could take; m3 is even already and only m2
    is short, of a: the even split moves two partitions (m1 -> m3 on b, m3 -> m2 on a), more than
    the one every even split must move, so the max flow declines."""
    problem: dict[str, Any] = {
        "topics": {"a": 3, "b": 3},
        "members": [
            {"id": "m1", "topics": ["a", "b"], "owned": {"b": [0, 1, 2]}},
            {"id": "m2", "topics": ["a"], "owned": {"a": [0]}},
            {"id": "m3", "topics": ["a", "b"], "owned": {"a": [1, 2]}},
        ],
    }
    model, flow, share = _model(problem)
    assert flow.solve_even_at_bound(share) is None
    assert _moves(model, flow, flow.solve_even(share, 0)) == 2


def test_partitions_nobody_holds_and_the_one_more_go_where_they_fit() -> None:
    """7 partitions over 3 members: one ends with 3. Nobody holds a2 or b2 (a member left)."""
    problem: dict[str, Any] = {
        "topics": {"a": 3, "b": 4},
        "members": [
            {"id": "m1", "topics": ["a"], "owned": {"a": [0, 1]}},
            {"id": "m2", "topics": ["b"], "owned": {"b": [0, 1, 3]}},
            {"id": "m3", "topics": ["a", "b"]},
        ],
    }
    model, flow, share = _model(problem)
    answer = flow.solve_even_at_bound(share)
    assert answer is not None
    assert sorted(answer.loads.tolist()) == [2, 2, 3]
    assert _moves(model, flow, answer) == 0
