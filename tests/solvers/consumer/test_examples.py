"""The contract's consumer examples reach the figures in expected.json."""

from __future__ import annotations

import pytest

from stickyd.solvers import solve_consumer
from tests.conftest import assert_valid, expected, load_example, loads_of

CONSUMER_EXAMPLES = sorted(k for k, v in expected().items() if k.startswith("consumer-") and "loads" in v)


@pytest.mark.parametrize("name", CONSUMER_EXAMPLES)
def test_optimal_reaches_the_expected_figures(name: str) -> None:
    want = expected()[name]
    problem = load_example(name)
    solution = solve_consumer(problem)
    assert_valid(problem, solution)
    assert solution.stats.moves == want["moves"]
    assert solution.stats.owned == want["owned"]
    assert loads_of(solution) == sorted(want["loads"])
    assert solution.stats.optimal is want["optimal"]
    if "assignment" in want:
        assert solution.assignment == want["assignment"]


@pytest.mark.parametrize("strategy", ["sticky", "range", "roundrobin"])
@pytest.mark.parametrize("name", CONSUMER_EXAMPLES)
def test_baselines_answer_validly_and_never_claim_optimality(name: str, strategy: str) -> None:
    problem = load_example(name)
    problem["options"] = {"strategy": strategy}
    solution = solve_consumer(problem)
    assert_valid(problem, solution)
    assert solution.stats.optimal is False
    assert solution.stats.strategy == strategy


def test_kip54_sticky_keeps_everything_when_a_member_leaves_equal_subscriptions() -> None:
    """KIP-54's example: after C1 leaves, C0 and C2 keep what they had."""
    problem = load_example("consumer-kip54-equal.json")
    problem["options"] = {"strategy": "sticky"}
    solution = solve_consumer(problem)
    assert solution.stats.moves == 0
    assert loads_of(solution) == [4, 4]


def test_kafka10121_join_moves_two_not_four() -> None:
    """KAFKA-10121's example as a consumer group: the join moves 2 where round robin moves 4."""
    problem = load_example("consumer-kafka10121-join.json")
    assert solve_consumer(problem).stats.moves == 2
    problem["options"] = {"strategy": "roundrobin"}
    assert solve_consumer(problem).stats.moves == 4


def test_cooperative_withholds_partitions_that_change_owner() -> None:
    """KIP-429: m3 gets nothing this round; m1/m2 revoke exactly what m3 will get."""
    problem = load_example("consumer-kafka10121-join.json")
    problem["options"] = {"protocol": "cooperative"}
    solution = solve_consumer(problem)
    assert_valid(problem, solution)
    assert solution.target is not None
    revoked = sorted(p for parts in solution.revoke.values() for p in parts.get("t", []))
    assert revoked == solution.target["m3"]["t"]
    assert solution.assignment["m3"] == {}
    assert solution.stats.moves == 2


def test_cooperative_revokes_a_double_claim_from_both_claimants() -> None:
    problem = load_example("consumer-generation-conflict.json")
    problem["options"] = {"protocol": "cooperative"}
    solution = solve_consumer(problem)
    assert_valid(problem, solution)
    assert 5 in solution.revoke["twin1"]["t"] and 5 in solution.revoke["twin2"]["t"]
    assert all(5 not in parts.get("t", []) for parts in solution.assignment.values())
