"""Equal subscriptions answered in closed form (solvers/consumer/equal.py): balanced, and the fewest
moves as the exact reference counts them, whoever owns too much (members over their quota keep
their lowest-numbered partitions) or nothing (joiners), with claims left by leavers."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import stickyd.solvers.consumer.equal
from stickyd.models import ConsumerProblem, index_consumer_problem
from stickyd.solvers.consumer.equal import _given_up, solve_equal
from stickyd.solvers.consumer.result import build_solution
from stickyd.solvers.outcome import Outcome
from tests.conftest import assert_valid
from tests.solvers.consumer.reference import reference_objective
from tests.solvers.consumer.test_properties import _squares


@st.composite
def equal_groups(draw: st.DrawFn) -> dict[str, Any]:
    topics = {f"t{i}": draw(st.integers(1, 7)) for i in range(draw(st.integers(1, 3)))}
    owner = {(t, p): draw(st.integers(-1, 5)) for t, n in topics.items() for p in range(n)}
    members = []
    for m in range(draw(st.integers(1, 5))):
        owned: dict[str, list[int]] = {}
        for (t, p), who in owner.items():
            if who == m:
                owned.setdefault(t, []).append(p)
        members.append({"id": f"m{m}", "topics": list(topics), "owned": owned, "generation": 1})
    return {"topics": topics, "members": members}


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(equal_groups())
def test_the_closed_form_is_balanced_with_the_fewest_moves(problem: dict[str, Any]) -> None:
    model = ConsumerProblem.model_validate(problem)
    index = index_consumer_problem(model)
    solution = build_solution(
        model, index, solve_equal(index), Outcome(strategy="optimal", solver="direct-equal", optimal=True), 0.0
    )
    assert_valid(model, solution)
    reference = reference_objective(problem)
    assert (_squares(solution), solution.stats.moves) == (reference["squares"], reference["moves"])


def test_a_member_over_its_quota_keeps_its_lowest_numbered_partitions() -> None:
    problem = {
        "topics": {"t": 6},
        "members": [
            {"id": "a", "topics": ["t"], "owned": {"t": [5, 0, 3, 1, 4]}, "generation": 1},
            {"id": "b", "topics": ["t"], "owned": {"t": [2]}, "generation": 1},
        ],
    }
    owners = solve_equal(index_consumer_problem(ConsumerProblem.model_validate(problem)))
    assert owners[0].tolist() == [0, 0, 1, 0, 1, 1]


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 6), st.lists(st.integers(-1, 5), max_size=60), st.data())
def test_a_member_gives_up_its_highest_numbered_partitions_however_far_back_they_lie(
    n: int, drawn: list[int], data: st.DataObject
) -> None:
    """Searched from the end in chunks that double (the first of one partition here), the partitions
    given up are each member's `excess` highest-numbered ones, whatever the excess."""
    claims = np.array([c if c < n else -1 for c in drawn], dtype=np.int64)
    own = np.bincount(claims[claims >= 0], minlength=n)
    excess = np.array([data.draw(st.integers(0, int(k))) for k in own], dtype=np.int64)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(stickyd.solvers.consumer.equal, "FIRST_CHUNK", 1)
        given_up = _given_up(claims, excess, n)
    assert len(set(given_up.tolist())) == len(given_up)
    for m in range(n):
        mine = np.flatnonzero(claims == m)
        expected = mine[len(mine) - int(excess[m]) :] if excess[m] else mine[:0]
        assert sorted(p for p in given_up.tolist() if claims[p] == m) == expected.tolist()
    assert all(claims[p] >= 0 for p in given_up.tolist())
