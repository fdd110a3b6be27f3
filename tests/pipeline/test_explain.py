"""`limited_by`: every answer that is not a proven, balanced optimum says in words what limits it
(stickyd.pipeline.explain, on real solver answers; no Spark)."""

from __future__ import annotations

from typing import Any

from stickyd.models import ConsumerProblem, parse
from stickyd.pipeline.explain import consumer_limit
from stickyd.solvers import solve_consumer


def _limit(problem: dict[str, Any], **solve: Any) -> str:
    parsed = parse(ConsumerProblem, problem)
    return consumer_limit(parsed, solve_consumer(parsed, **solve))


def test_a_balanced_proven_optimum_needs_no_words() -> None:
    members = [{"id": f"c{i}", "topics": ["orders"]} for i in range(3)]
    assert _limit({"topics": {"orders": 7}, "members": members}) == ""


def test_a_member_that_subscribes_to_little_is_named_as_the_limit() -> None:
    """`small` has one partition and only `a` reads it: a=1, b=c=5 is the optimum (balance 4)."""
    problem = {
        "topics": {"small": 1, "big": 10},
        "members": [{"id": "a", "topics": ["small"]}, {"id": "b", "topics": ["big"]}, {"id": "c", "topics": ["big"]}],
    }
    assert _limit(problem) == (
        "proven optimal: subscriptions allow no better (a subscribes to 1 partition(s) in all and has every one)"
    )


def test_the_busiest_members_topics_and_their_other_readers_are_named() -> None:
    """`a` (10 partitions) is read by x and y, `b` (1) by z and w: loads 5, 5, 1, 0; nobody with
    less than 5 reads `a`, so nothing can move off the busiest member."""
    problem = {
        "topics": {"a": 10, "b": 1},
        "members": [{"id": i, "topics": [t]} for i, t in (("x", "a"), ("y", "a"), ("z", "b"), ("w", "b"))],
    }
    assert _limit(problem) == (
        "proven optimal: subscriptions allow no better (every other reader of y's topics a has 5 or more)"
    )


def test_co_partitioned_units_are_named_when_they_set_the_spread() -> None:
    """Two 2-topic units for three members: someone gets none, others get a whole unit of 2."""
    problem = {
        "topics": {"left": 2, "right": 2},
        "copartitioned": [["left", "right"]],
        "members": [{"id": f"c{i}", "topics": ["left", "right"]} for i in range(3)],
    }
    assert _limit(problem) == "proven optimal: co-partitioned topics (left, right) move as units of 2 partitions"


def test_fallback_and_baselines_say_so() -> None:
    members = [{"id": "a", "topics": ["t"]}, {"id": "b", "topics": ["t"]}]
    problem = {"topics": {"t": 4}, "members": members}
    assert _limit(problem, fallback_reason="service deadline passed") == "fell back: service deadline passed"
    ranged = {**problem, "options": {"strategy": "range"}}
    assert _limit(ranged) == "strategy 'range' asked for: a baseline, not optimised"
