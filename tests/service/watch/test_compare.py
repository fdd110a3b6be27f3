"""A watched group compared with stickyd's answers (service/watch/compare.py): the weights are what
`"live"` reads, the problem is the group as its coordinator describes it and fits the contract, and
the figures reported for an answer (bottleneck, moves) are the answer's own, checked against
recomputed ones; with a proven load answer stickyd's bottleneck is never above the group's now."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from stickyd.client.cluster_reader import GroupState, MemberState
from stickyd.models import ConsumerProblem
from stickyd.models.cluster import Bottleneck
from stickyd.service.watch.compare import _answer, bottleneck, group_problem, live_weights, member_figures
from stickyd.service.watch.live_weights import fill_live_weights
from stickyd.service.watch.rates import UNMEASURED, LiveRates
from stickyd.solvers.consumer.dispatch import solve_consumer
from tests.conftest import assert_valid

TOPICS = ("orders", "clicks", "audit")


def test_weights_are_what_live_reads_and_a_topic_without_a_rate_weighs_nothing() -> None:
    rates = LiveRates(topics={"orders": (10, UNMEASURED, 31), "clicks": (UNMEASURED,)}, window_s=5, sampled_at=1.0)
    weights = live_weights(rates, {"orders": 4, "clicks": 2, "audit": 1})
    assert weights == {"orders": [10, 20, 31, 20], "clicks": [0, 0], "audit": [0]}
    # the same figures as partition_weights "live" gives a request for the measured topic
    problem = ConsumerProblem.model_validate(
        {"topics": {"orders": 4}, "partition_weights": "live", "members": [{"id": "a", "topics": ["orders"]}]}
    )
    filled, _ = fill_live_weights(problem, rates)
    assert filled.partition_weights == {"orders": weights["orders"]}


def test_a_members_figures_count_its_partitions_and_their_records() -> None:
    weights = {"orders": [5, 7, 9]}
    figures = member_figures({"orders": [0, 2, 5], "gone": [0]}, weights)  # out of range, unknown topic: not counted
    assert figures == Bottleneck(count=2, load=14)
    assert bottleneck([figures, Bottleneck(count=3, load=1)]) == Bottleneck(count=3, load=14)
    assert bottleneck([]) == Bottleneck(count=0, load=0)


def test_the_problem_is_the_group_as_it_is() -> None:
    group = GroupState(
        "g",
        "consumer",
        "Stable",
        "range",
        (
            MemberState("m2", "c2", "h", ("orders", "elsewhere"), {"orders": [2, 3]}, generation=4),
            MemberState("m1", "c1", "h", ("orders",), {"orders": [0, 1], "clicks": [0]}, generation=-1),
        ),
        epoch=4,
    )
    weights = {"orders": [1, 2, 3, 4], "clicks": [9]}
    count, load = group_problem(group, weights, "count"), group_problem(group, weights, "load")
    assert count["members"] == [
        {"id": "m1", "topics": ["orders"], "owned": {"orders": [0, 1]}},
        {"id": "m2", "topics": ["orders"], "owned": {"orders": [2, 3]}, "generation": 4},
    ]
    assert count["topics"] == {"orders": 4} and "partition_weights" not in count
    assert load["partition_weights"] == {"orders": [1, 2, 3, 4]} and load["options"]["balance"] == "load"
    assert count["options"]["strategy"] == "optimal" and count["options"]["time_limit_ms"] > 0


@st.composite
def groups(draw: st.DrawFn) -> tuple[GroupState, dict[str, list[int]]]:
    sizes = {t: draw(st.integers(1, 6)) for t in TOPICS}
    weights = {t: draw(st.lists(st.integers(0, 1000), min_size=n, max_size=n)) for t, n in sizes.items()}
    count = draw(st.integers(1, 4))
    subscriptions = [
        tuple(sorted(draw(st.sets(st.sampled_from([*TOPICS, "unknown"]), max_size=3)))) for _ in range(count)
    ]
    owner = {
        (t, p): draw(st.one_of(st.none(), st.integers(0, count - 1))) for t, n in sizes.items() for p in range(n + 1)
    }
    members = []
    for i, topics in enumerate(subscriptions):
        owned: dict[str, list[int]] = {}
        for (t, p), m in sorted(owner.items()):
            if m == i:
                owned.setdefault(t, []).append(p)
        members.append(MemberState(f"m{i}", f"c{i}", "h", topics, owned, generation=draw(st.sampled_from([-1, 3]))))
    return GroupState("g", "consumer", "Stable", "uniform", tuple(members), epoch=3), weights


@settings(max_examples=40, deadline=None)
@given(groups(), st.sampled_from(["count", "load"]))
def test_an_answers_figures_are_its_own(case: tuple[GroupState, dict[str, list[int]]], balance: str) -> None:
    group, weights = case
    problem = group_problem(group, weights, balance)
    if not problem["topics"]:
        return
    solution = solve_consumer(problem)
    assert_valid(problem, solution)
    answer = _answer(solution.model_dump_json().encode(), balance, weights)
    owners = {(t, p): m for m, owned in solution.assignment.items() for t, ps in owned.items() for p in ps}
    before = {
        (t, p): m["id"]
        for m in problem["members"]
        for t, ps in m.get("owned", {}).items()
        for p in ps
        if p < len(weights[t])
    }
    assert answer.moves == sum(1 for tp, m in before.items() if owners[tp] != m)
    loads = {m: sum(weights[t][p] for t, ps in owned.items() for p in ps) for m, owned in solution.assignment.items()}
    assert answer.bottleneck.load == max(loads.values(), default=0)
    assert answer.members == {m: member_figures(owned, weights) for m, owned in solution.assignment.items()}
    if balance == "load" and solution.stats.optimal and len(before) == sum(problem["topics"].values()):
        # every partition owned by a subscriber now: the group's assignment is an answer too
        now = bottleneck([member_figures(m.get("owned", {}), weights) for m in problem["members"]])
        assert answer.bottleneck.load <= now.load


def test_an_answer_reads_the_solvers_json() -> None:
    body = json.dumps(
        {
            "assignment": {"a": {"orders": [0]}, "b": {"orders": [1, 2]}},
            "stats": {"moves": 1, "solver": "cp-sat", "optimal": True, "fallback": False, "time_ms": 3.5},
        }
    ).encode()
    answer = _answer(body, "load", {"orders": [10, 1, 1]})
    assert answer.bottleneck == Bottleneck(count=2, load=10) and answer.moves == 1 and answer.optimal
    assert answer.members == {"a": Bottleneck(count=1, load=10), "b": Bottleneck(count=2, load=2)}


@st.composite
def whole_groups(draw: st.DrawFn) -> tuple[GroupState, dict[str, list[int]]]:
    """Every member subscribes every topic and every partition has an owner: the group's own
    assignment is one of the answers stickyd chooses from."""
    weights = {t: draw(st.lists(st.integers(0, 1000), min_size=1, max_size=6)) for t in TOPICS}
    count = draw(st.integers(1, 4))
    owned: list[dict[str, list[int]]] = [{} for _ in range(count)]
    for t, per in weights.items():
        for p in range(len(per)):
            owned[draw(st.integers(0, count - 1))].setdefault(t, []).append(p)
    members = tuple(MemberState(f"m{i}", f"c{i}", "h", TOPICS, owned[i], generation=5) for i in range(count))
    return GroupState("g", "consumer", "Stable", "uniform", members, epoch=5), weights


@settings(max_examples=30, deadline=None)
@given(whole_groups())
def test_a_proven_load_answer_is_never_busier_than_the_group_now(case: tuple[GroupState, dict[str, list[int]]]) -> None:
    group, weights = case
    problem = group_problem(group, weights, "load")
    solution = solve_consumer(problem)
    assert_valid(problem, solution)
    answer = _answer(solution.model_dump_json().encode(), "load", weights)
    now = bottleneck([member_figures(m.assignment, weights) for m in group.members])
    if solution.stats.optimal:
        assert answer.bottleneck.load <= now.load
    assert answer.moves <= sum(len(ps) for m in group.members for ps in m.assignment.values())
