"""Property tests over random consumer problems: validity, optimality against the reference,
dominance over the baselines, determinism under member order, and the time limit."""

from __future__ import annotations

import random
import time
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from stickyd.solvers import solve_consumer
from tests.conftest import assert_valid
from tests.solvers.consumer.reference import reference_objective

RACKS = ["r1", "r2", "r3"]


@st.composite
def consumer_problems(draw: st.DrawFn, joins: bool = True, max_partitions: int = 6) -> dict[str, Any]:
    """Equal and unequal subscriptions, joins, leaves (claims by nobody present), partitions
    added (claims below the count), stale, out-of-range and double claims, co-partitioning."""
    n_topics = draw(st.integers(1, 3))
    topics = {f"t{i}": draw(st.integers(0, max_partitions)) for i in range(n_topics)}
    names = list(topics)
    equal = draw(st.booleans())
    shared = draw(st.lists(st.sampled_from(names), min_size=1, unique=True))
    members = []
    for i in range(draw(st.integers(1, 4))):
        subs = shared if equal else draw(st.lists(st.sampled_from([*names, "ghost"]), unique=True))
        owned = {}
        for t in draw(st.lists(st.sampled_from(names), unique=True, max_size=2)):
            owned[t] = draw(st.lists(st.integers(0, max_partitions + 1), unique=True, max_size=4))
        member: dict[str, Any] = {"id": f"m{i}", "topics": subs, "owned": owned}
        if draw(st.booleans()):
            member["generation"] = draw(st.integers(1, 3))
        if draw(st.booleans()):
            member["rack"] = draw(st.sampled_from(RACKS))
        members.append(member)
    problem: dict[str, Any] = {"topics": topics, "members": members}
    if joins and n_topics >= 2 and draw(st.booleans()):
        problem["copartitioned"] = [names[:2]]
    if draw(st.booleans()):
        t = draw(st.sampled_from(names))
        problem["partition_racks"] = {
            t: [draw(st.lists(st.sampled_from(RACKS), max_size=2, unique=True)) for _ in range(topics[t])]
        }
    return problem


def _loads(solution: Any) -> list[int]:
    assignment = solution.target if solution.target is not None else solution.assignment
    return sorted((sum(len(p) for p in parts.values()) for parts in assignment.values()), reverse=True)


def _squares(solution: Any) -> int:
    return sum(x * x for x in _loads(solution))


def _assigned(solution: Any) -> int:
    return sum(_loads(solution))


def _rack_misses(problem: dict[str, Any], solution: Any) -> int:
    racks = problem.get("partition_racks", {})
    rack_of = {m["id"]: m.get("rack") for m in problem["members"]}
    misses = 0
    for member, parts in solution.assignment.items():
        rack = rack_of[member]
        for topic, partitions in parts.items():
            if rack is None or topic not in racks:
                continue
            misses += sum(1 for p in partitions if racks[topic][p] and rack not in racks[topic][p])
    return misses


SETTINGS = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(
    consumer_problems(),
    st.sampled_from(["optimal", "sticky", "range", "roundrobin"]),
    st.sampled_from(["eager", "cooperative"]),
)
def test_every_strategy_answers_validly(problem: dict[str, Any], strategy: str, protocol: str) -> None:
    problem["options"] = {"strategy": strategy, "protocol": protocol}
    assert_valid(problem, solve_consumer(problem))


@SETTINGS
@given(consumer_problems())
def test_optimal_matches_the_exact_reference(problem: dict[str, Any]) -> None:
    solution = solve_consumer(problem)
    assert_valid(problem, solution)
    want = reference_objective(problem)
    assert solution.stats.optimal
    assert _assigned(solution) == want["assigned"]
    assert _squares(solution) == want["squares"]
    assert solution.stats.moves == want["moves"]
    assert _rack_misses(problem, solution) == want["racks"]


@settings(max_examples=60, deadline=None)
@given(consumer_problems(joins=False), st.integers(1, 2))
def test_max_imbalance_trades_balance_for_moves_as_the_reference_does(problem: dict[str, Any], k: int) -> None:
    problem["options"] = {"max_imbalance": k}
    solution = solve_consumer(problem)
    assert_valid(problem, solution)
    want = reference_objective(problem)
    assert solution.stats.moves == want["moves"]
    assert _squares(solution) == want["squares"]


@SETTINGS
@given(consumer_problems())
def test_optimal_is_never_beaten_by_a_baseline(problem: dict[str, Any]) -> None:
    best = solve_consumer(problem)
    for strategy in ["sticky", "range", "roundrobin"]:
        other = solve_consumer({**problem, "options": {"strategy": strategy}})
        assert (_squares(best), best.stats.moves) <= (_squares(other), other.stats.moves) or (
            _assigned(best) > _assigned(other)
        )


@SETTINGS
@given(
    consumer_problems(),
    st.randoms(use_true_random=False),
    st.sampled_from(["optimal", "sticky", "range", "roundrobin"]),
)
def test_member_order_does_not_change_the_answer(problem: dict[str, Any], rng: random.Random, strategy: str) -> None:
    problem["options"] = {"strategy": strategy}
    shuffled = {**problem, "members": rng.sample(problem["members"], len(problem["members"]))}
    a, b = solve_consumer(problem), solve_consumer(shuffled)
    assert a.model_dump(exclude={"stats"}) == b.model_dump(exclude={"stats"})
    assert a.stats.moves == b.stats.moves


@settings(max_examples=10, deadline=None)
@given(st.integers(0, 10_000))
def test_a_tiny_time_limit_still_returns_a_valid_answer_on_time(seed: int) -> None:
    rng = random.Random(seed)
    topics = {f"t{i}": rng.randint(50, 400) for i in range(20)}
    members = [{"id": f"m{i}", "topics": rng.sample(sorted(topics), rng.randint(1, 20))} for i in range(60)]
    problem = {"topics": topics, "members": members, "options": {"time_limit_ms": 1}}
    started = time.monotonic()
    solution = solve_consumer(problem)
    elapsed = time.monotonic() - started
    assert_valid(problem, solution)
    assert elapsed < 0.001 + 0.5
    assert solution.stats.optimal is not solution.stats.fallback
