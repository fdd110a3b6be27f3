"""Balance `load`'s proofs where weights share a divisor (every member's total is then a multiple of
it, and the fractional bound rounds each member's room down to one), and the moves floor that a
tolerance-free answer tightens: never above the brute-force reference, on random tiny groups and on
a hand-counted one."""

from __future__ import annotations

from fractions import Fraction
from typing import Any
from unittest.mock import patch

from hypothesis import given
from hypothesis import strategies as st

from stickyd.solvers import solve_consumer
from stickyd.solvers.consumer.load import solve as balanced_solve
from tests.conftest import assert_valid
from tests.solvers.consumer.balance_reference import load_reference
from tests.solvers.consumer.test_balance import SETTINGS, groups


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
    level-2 optimum, optimal only when it is."""
    want = load_reference(problem)
    with patch.object(balanced_solve, "EXACT_MAX_PAIRS", 0):
        solution = solve_consumer(problem)
    assert_valid(problem, solution)
    figures = solution.stats.load
    assert figures is not None and figures.lower_bound is not None and figures.moves_lower_bound is not None
    assert Fraction(figures.lower_bound) <= want["bottleneck"] * (1 + Fraction(1, 10**12))
    assert figures.moves_lower_bound <= want["moves"] <= solution.stats.moves
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
