"""Balance `load`'s proofs where weights share a divisor (every member's total is then a multiple of
it, and the fractional bound rounds each member's room down to one), and the moves floor that a
tolerance-free answer tightens: never above the brute-force reference, on random tiny groups and on
a hand-counted one; and the heuristic's answers on larger random groups: valid, never below the
bound, never under the moves floor."""

from __future__ import annotations

import time
from fractions import Fraction
from typing import Any
from unittest.mock import patch

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from stickyd.models.consumer.balance import index_balance
from stickyd.models.consumer.index import index_consumer_problem
from stickyd.models.consumer.problem import ConsumerProblem
from stickyd.solvers import solve_consumer
from stickyd.solvers.budget import TimeBudget
from stickyd.solvers.consumer.load import heuristic, lag_greedy
from stickyd.solvers.consumer.load import solve as balanced_solve
from stickyd.solvers.consumer.load.bound import fractional_bound, moves_lower_bound
from stickyd.solvers.consumer.load.data import load_data
from stickyd.solvers.consumer.load.exact import bottleneck_of, kept_of
from stickyd.solvers.consumer.load.heuristic import shed_and_place, tight_answer
from stickyd.solvers.consumer.load.solve import _any_bottleneck
from stickyd.solvers.errors import SolveTimeout
from tests.conftest import assert_valid
from tests.solvers.consumer.load.balance_reference import load_reference
from tests.solvers.consumer.load.test_balance import SETTINGS, groups


def _multiples(problem: dict[str, Any], divisor: int, draw: st.DrawFn) -> dict[str, Any]:
    """The group with every partition weighing a multiple of `divisor` (0 to 9 times it)."""
    problem["partition_weights"] = {
        t: [draw(st.integers(0, 9)) * divisor for _ in range(n)] for t, n in problem["topics"].items()
    }
    return problem


@st.composite
def divisible_groups(draw: st.DrawFn) -> dict[str, Any]:
    return _multiples(draw(groups("load")), draw(st.sampled_from([2, 3, 500, 10**6, 10**11])), draw)


@SETTINGS
@given(divisible_groups())
def test_bounds_on_weights_sharing_a_divisor_stay_below_the_reference(problem: dict[str, Any]) -> None:
    """Without the exact model (as at scale): lower_bound at most L*, moves_lower_bound at most the
    level-2 optimum, and the answer's moves at least it where its bottleneck is within the
    tolerance of L* (a heuristic answer above it may move less); optimal only when it is."""
    want = load_reference(problem)
    with patch.object(balanced_solve, "EXACT_MAX_PAIRS", 0):
        solution = solve_consumer(problem)
    assert_valid(problem, solution)
    figures = solution.stats.load
    assert figures is not None and figures.lower_bound is not None and figures.moves_lower_bound is not None
    assert Fraction(figures.lower_bound) <= want["bottleneck"] * (1 + Fraction(1, 10**12))
    assert figures.moves_lower_bound <= want["moves"]
    tolerance = Fraction(problem["options"].get("load_tolerance", 0.05))
    if Fraction(figures.max) <= want["bottleneck"] * (1 + tolerance) * (1 + Fraction(1, 10**12)):
        assert want["moves"] <= solution.stats.moves
    if solution.stats.optimal:
        assert solution.stats.moves == want["moves"]


def test_a_common_divisor_lifts_the_bound_to_the_best_bottleneck() -> None:
    """Three partitions of 500 on two members of capacity 1: split at will they fit under 750 each,
    but a member's total is a multiple of 500, so one member carries 1,000 in every answer; the bound
    proves it (to the bisection's precision) and the answer reaches it."""
    problem = {
        "topics": {"t": 3},
        "partition_weights": {"t": [500, 500, 500]},
        "members": [
            {"id": "a", "topics": ["t"], "owned": {"t": [0, 1, 2]}, "generation": 1},
            {"id": "b", "topics": ["t"]},
        ],
        "options": {"balance": "load", "load_tolerance": 0},
    }
    with patch.object(balanced_solve, "EXACT_MAX_PAIRS", 0):
        solution = solve_consumer(problem)
    assert_valid(problem, solution)
    figures = solution.stats.load
    assert figures is not None and figures.lower_bound is not None
    assert 999.999 < figures.lower_bound <= 1_000 == figures.max
    assert solution.stats.moves == figures.moves_lower_bound == 1


@st.composite
def medium_groups(draw: st.DrawFn) -> dict[str, Any]:
    """1-4 topics of 5-60 partitions, 3-10 members of capacity 1, 2 or 4 on random subsets, skewed
    weights (a few hot partitions), each partition claimed by a random subscriber or by nobody:
    beyond the tiny reference, where steps 3 and 4 of the heuristic have work to do."""
    topics = {f"t{i}": draw(st.integers(5, 60)) for i in range(draw(st.integers(1, 4)))}
    names = sorted(topics)
    heavy = st.one_of(st.integers(1, 2_000), st.integers(10_000, 50_000))
    weights = {t: [draw(heavy) for _ in range(n)] for t, n in topics.items()}
    members: list[dict[str, Any]] = []
    for i in range(draw(st.integers(3, 10))):
        subscribed = draw(st.lists(st.sampled_from(names), min_size=1, unique=True))
        members.append({"id": f"m{i}", "topics": subscribed, "capacity": draw(st.sampled_from([1, 2, 4]))})
    for t, n in topics.items():
        subscribers = [m for m in members if t in m["topics"]]
        for p in range(n):
            if subscribers and draw(st.integers(0, 3)):
                owner = subscribers[draw(st.integers(0, len(subscribers) - 1))]
                owner.setdefault("owned", {}).setdefault(t, []).append(p)
                owner["generation"] = 1
    tolerance = draw(st.sampled_from([0, 0.02, 0.05, 0.2]))
    options = {"balance": "load", "load_tolerance": tolerance, "time_limit_ms": 30_000}
    return {"topics": topics, "partition_weights": weights, "members": members, "options": options}


@SETTINGS
@given(medium_groups())
def test_heuristic_answers_are_valid_and_never_beat_the_bounds(problem: dict[str, Any]) -> None:
    """The sticky answer and the tolerance-free one put every unit on an eligible member and never
    go below the proven bound; an answer within (1 + tolerance) x the bound (so within it of L*)
    never moves fewer partitions than the proven floor."""
    model = ConsumerProblem.model_validate(problem)
    index = index_consumer_problem(model)
    data = load_data(index, index_balance(model, index))
    budget = TimeBudget(time.monotonic() + 30)
    bound = fractional_bound(data, _any_bottleneck(data), budget)
    sticky, tight = shed_and_place(data, bound, budget), tight_answer(data, bound, budget)
    for owners in (sticky, tight):
        for group, owner in zip(data.groups, owners, strict=True):
            assert np.isin(owner, group.eligible).all()
        assert bottleneck_of(data, owners) >= bound
    floor = moves_lower_bound(data, index.owned, min(bottleneck_of(data, sticky), bottleneck_of(data, tight)))
    for owners in (sticky, tight):
        if bottleneck_of(data, owners) <= (1 + data.tolerance) * bound:
            assert index.owned - kept_of(index, owners) >= floor


def test_a_tolerance_free_answer_out_of_time_leaves_the_sticky_answer_standing() -> None:
    """When the time left runs out inside the second answer, the sticky one still answers (no
    fallback), with a floor on the moves from its own bottleneck."""
    problem = {
        "topics": {"t": 40},
        "partition_weights": {"t": [1_000 + 37 * p for p in range(40)]},
        "members": [
            {
                "id": f"m{i}",
                "topics": ["t"],
                "capacity": 1 + i % 2,
                "owned": {"t": list(range(i, 40, 3))},
                "generation": 1,
            }
            for i in range(3)
        ]
        + [{"id": "m3", "topics": ["t"]}],
        "options": {"balance": "load"},
    }

    def out_of_time(*_: object) -> None:
        raise SolveTimeout("the load heuristic ran out of its time limit")

    with patch.object(balanced_solve, "EXACT_MAX_PAIRS", 0), patch.object(balanced_solve, "tight_answer", out_of_time):
        solution = solve_consumer(problem)
    assert_valid(problem, solution)
    assert solution.stats.solver == "load-heuristic" and not solution.stats.fallback
    figures = solution.stats.load
    assert figures is not None and figures.lower_bound is not None
    assert figures.max <= 1.05 * figures.lower_bound
    assert figures.moves_lower_bound <= solution.stats.moves


def test_the_moves_floor_counts_no_shedding_of_co_partitioned_units() -> None:
    """t0 and t1 co-partitioned, every partition weighing 1: units (t0-0, t1-0) and (t0-1, t1-1)
    weigh 2. m0 owns t0 0 and 1, m1 owns t1 1; the best bottleneck is 2, one unit each. Giving
    m1 the second unit moves only t0-1 (m1 keeps t1-1): one move, which the floor must not pass
    (m0 giving up a unit costs nothing beyond what the unit loses anyway)."""
    problem = {
        "topics": {"t0": 2, "t1": 2},
        "copartitioned": [["t0", "t1"]],
        "members": [
            {"id": "m0", "topics": ["t0", "t1"], "owned": {"t0": [0, 1]}, "generation": 1},
            {"id": "m1", "topics": ["t0", "t1"], "owned": {"t1": [1]}, "generation": 1},
        ],
        "options": {"balance": "load", "load_tolerance": 0},
    }
    assert load_reference(problem)["moves"] == 1
    with patch.object(balanced_solve, "EXACT_MAX_PAIRS", 0):
        solution = solve_consumer(problem)
    assert_valid(problem, solution)
    figures = solution.stats.load
    assert figures is not None and figures.moves_lower_bound is not None
    assert figures.moves_lower_bound <= 1


@SETTINGS
@given(medium_groups())
def test_placement_by_scan_and_by_heaps_choose_the_same_members(problem: dict[str, Any]) -> None:
    """Step 3 finds the lightest eligible member by a scan where members sit in many eligible sets
    and by lazy heaps elsewhere: the same member every time, so the same answer."""
    answers = []
    for scan_from in (0, 10**9):
        with patch.object(heuristic, "SCAN_FROM_SETS", scan_from), patch.object(balanced_solve, "EXACT_MAX_PAIRS", 0):
            answers.append(solve_consumer(problem).assignment)
    assert answers[0] == answers[1]


@SETTINGS
@given(medium_groups())
def test_lag_greedy_by_scan_and_by_heaps_deals_the_same(problem: dict[str, Any]) -> None:
    """The lag-greedy baseline finds the least normalized load by a scan where members sit in many
    eligible sets and by lazy heaps elsewhere: the same answer."""
    problem["options"]["strategy"] = "lag-greedy"
    answers = []
    for scan_from in (0, 10**9):
        with patch.object(lag_greedy, "SCAN_FROM_SETS", scan_from):
            answers.append(solve_consumer(problem).assignment)
    assert answers[0] == answers[1]
