"""The dispatcher estimates the optimal flow's cost from its network's size before building it
(solvers/consumer_estimate.py): when the estimate does not fit in what is left of the optimal
solver's share, the flow is not started and the fallback answers in the same call, with
`stats.fallback` and the reason; when it fits, the proven answer comes as before."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings

import solvers.consumer_dispatch
import solvers.consumer_estimate
from models import ConsumerProblem, index_consumer_problem
from service.jobs import fallback_cause
from solvers import solve_consumer
from solvers.budget import TimeBudget
from solvers.consumer_classes import build_classes
from solvers.consumer_dispatch import _uniform_unit_weights
from solvers.consumer_estimate import network_arcs
from solvers.consumer_flow import ConsumerFlowModel, Weights
from tests.conftest import assert_valid
from tests.solvers.test_consumer_properties import consumer_problems
from tests.solvers.test_consumer_spent_share import UNEQUAL as SPENT_SHARE_UNEQUAL

# cooperative with claims: past the tiny path, through the general dispatcher
UNEQUAL: dict[str, Any] = {**SPENT_SHARE_UNEQUAL, "options": {"protocol": "cooperative"}}


def test_a_network_estimated_past_the_share_falls_back_without_building_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """Ten seconds left, but a network estimated at far more: no classes, no flow; KIP-54
    answers (it fits), flagged as a fallback whose reason names the estimate and the time left."""

    def no_model(*_args: object) -> None:
        raise AssertionError("the optimal solver's model was built although its estimate did not fit")

    monkeypatch.setattr(solvers.consumer_dispatch, "build_classes", no_model)
    monkeypatch.setattr(solvers.consumer_estimate, "FLOW_S_PER_ARC", 3600.0)
    solution = solve_consumer(UNEQUAL, budget=TimeBudget.of_ms(10_000))
    stats = solution.stats
    assert stats.fallback and not stats.optimal
    assert stats.solver == "kip54-sticky"
    said = [w for w in stats.warnings if "the optimal solver was not started" in w]
    assert len(said) == 1 and "arcs) is estimated at" in said[0] and "ms left" in said[0]
    assert fallback_cause(None, stats.warnings) == "solver-time-limit"
    assert_valid(UNEQUAL, solution)


def test_a_network_whose_estimate_fits_gets_the_proven_answer() -> None:
    solution = solve_consumer(UNEQUAL, budget=TimeBudget.of_ms(10_000))
    assert solution.stats.optimal and not solution.stats.fallback
    assert not any("not started" in w for w in solution.stats.warnings)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(consumer_problems(joins=False, max_partitions=8))
def test_the_estimated_arcs_bound_the_flows_routing_arcs_for_plain_topics(problem: dict[str, Any]) -> None:
    """For topics without joins or partition racks (every group plain), the count the estimate
    uses is at least the arcs the flow routes units over."""
    problem = {k: v for k, v in problem.items() if k != "partition_racks"}
    index = index_consumer_problem(ConsumerProblem.model_validate(problem))
    weights = _uniform_unit_weights(index)
    assert weights is not None
    model = ConsumerFlowModel(index, build_classes(index), weights)
    tails = model._routing_arcs(Weights(balance=1, moves=1, racks=1))[0]
    assert len(tails) <= network_arcs(index)
