"""When reading a request (decode, claims, index) used up the optimal solver's share of the time
limit, the dispatcher goes straight to the fallback without building the solver's model, and
says why in the answer's warnings; the answer is valid."""

from __future__ import annotations

import time
from typing import Any

import pytest

import stickyd.solvers.consumer.dispatch
from stickyd.models import ConsumerProblem
from stickyd.models.consumer.validation import validate_consumer_solution
from stickyd.solvers import solve_consumer
from stickyd.solvers.budget import TimeBudget

UNEQUAL: dict[str, Any] = {
    "topics": {"a": 6, "b": 4, "c": 5},
    "members": [
        {"id": "m1", "topics": ["a", "b"], "owned": {"a": [0, 1, 2], "b": [0]}},
        {"id": "m2", "topics": ["b", "c"], "owned": {"c": [0, 1, 2, 3, 4]}},
        {"id": "m3", "topics": ["a", "c"]},
    ],
}


def test_a_spent_share_skips_the_optimal_solvers_model(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_model(*_args: object) -> None:
        raise AssertionError("the optimal solver's model was built after its share was spent")

    monkeypatch.setattr(stickyd.solvers.consumer.dispatch, "build_classes", no_model)
    solution = solve_consumer(UNEQUAL, budget=TimeBudget(time.monotonic() - 1))
    assert solution.stats.fallback
    assert any("no time left for it within the time limit" in w for w in solution.stats.warnings)
    assert validate_consumer_solution(ConsumerProblem.model_validate(UNEQUAL), solution) == []


def test_time_left_still_gets_the_proven_answer() -> None:
    solution = solve_consumer(UNEQUAL, budget=TimeBudget.of_ms(10_000))
    assert solution.stats.optimal and not solution.stats.fallback
