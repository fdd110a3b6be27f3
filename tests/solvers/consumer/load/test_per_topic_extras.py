"""Balance `per_topic` by the extras' flow (solvers/consumer/load/per_topic_extras.py): on groups
larger than the brute-force reference can take, the same squared totals and moves as the full
per-topic flow, proven and valid; it answers only single-topic groups without racks; each
claimant keeps its lowest-numbered partitions up to its count."""

from __future__ import annotations

from typing import Any
from unittest.mock import patch

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from stickyd.models import ConsumerProblem, index_consumer_problem
from stickyd.solvers import solve_consumer
from stickyd.solvers.consumer.load import solve as balanced_solve
from stickyd.solvers.consumer.load.per_topic_extras import fits_extras, solve_per_topic_extras
from tests.conftest import assert_valid

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def medium_groups(draw: st.DrawFn) -> dict[str, Any]:
    """2-12 members, 1-6 topics of 1-40 partitions, unequal subscriptions, previous owners over two
    generations (some partitions owned twice, some by nobody), eager or cooperative."""
    topics = {f"t{i}": draw(st.integers(1, 40)) for i in range(draw(st.integers(1, 6)))}
    names = list(topics)
    members = []
    for i in range(draw(st.integers(2, 12))):
        subscribed = draw(st.lists(st.sampled_from(names), min_size=1, unique=True))
        owned = {t: draw(st.lists(st.integers(0, topics[t] - 1), unique=True)) for t in subscribed}
        members.append({"id": f"m{i:02d}", "topics": subscribed, "owned": owned, "generation": draw(st.integers(0, 1))})
    protocol = draw(st.sampled_from(["eager", "cooperative"]))
    options = {"balance": "per_topic", "time_limit_ms": 30_000, "protocol": protocol}
    return {"topics": topics, "members": members, "options": options}


def _figures(problem: dict[str, Any], *, extras: bool) -> tuple[int, int]:
    """(sum of squared totals, moves) of the proven, valid answer, by the extras' flow or not."""
    with patch.object(balanced_solve, "fits_extras", fits_extras if extras else lambda index: False):
        solution = solve_consumer(problem)
    assert_valid(problem, solution)
    assert solution.stats.optimal and not solution.stats.fallback
    final = solution.target if solution.target is not None else solution.assignment
    totals = [sum(len(p) for p in parts.values()) for parts in final.values()]
    return sum(t * t for t in totals), solution.stats.moves


@SETTINGS
@given(medium_groups())
def test_extras_reach_the_full_flows_levels(problem: dict[str, Any]) -> None:
    """The extras' flow and the full per-topic flow agree on every proven level."""
    assert _figures(problem, extras=True) == _figures(problem, extras=False)


def test_joins_and_racks_take_the_full_flow() -> None:
    """A co-partitioned pair or partition racks leave the extras' flow out; plain topics take it."""
    plain: dict[str, Any] = {
        "topics": {"a": 2, "b": 2},
        "members": [{"id": "m0", "topics": ["a", "b"]}, {"id": "m1", "topics": ["a", "b"], "rack": "r1"}],
    }
    joined = {**plain, "copartitioned": [["a", "b"]]}
    racked = {**plain, "partition_racks": {"a": [["r1"], ["r2"]], "b": [["r1"], ["r2"]]}}
    fits = [fits_extras(index_consumer_problem(ConsumerProblem.model_validate(p))) for p in (plain, joined, racked)]
    assert fits == [True, False, False]


def test_claimants_keep_their_lowest_partitions_up_to_their_count() -> None:
    """Six partitions over two subscribers (three each): m0 owned 0, 2, 4, 5 and keeps 0, 2, 4;
    m1 owned 1 and keeps it, then takes 3 and 5 that nobody keeps."""
    problem = {
        "topics": {"a": 6},
        "members": [
            {"id": "m0", "topics": ["a"], "owned": {"a": [0, 2, 4, 5]}, "generation": 1},
            {"id": "m1", "topics": ["a"], "owned": {"a": [1]}, "generation": 1},
        ],
    }
    index = index_consumer_problem(ConsumerProblem.model_validate(problem))
    (owner,) = solve_per_topic_extras(index, lambda: None)
    assert owner.tolist() == [0, 1, 0, 1, 0, 1]
    assert np.array_equal(np.bincount(owner), [3, 3])
