"""Claim resolution's warnings name what they ignore: counts per reason, then the first few
ignored claims with member, topic, partition and reason."""

from __future__ import annotations

from typing import Any

from stickyd.models import ConsumerProblem
from stickyd.models.consumer.index import index_consumer_problem


def _warnings(raw: dict[str, Any]) -> list[str]:
    return list(index_consumer_problem(ConsumerProblem.model_validate(raw)).warnings)


def test_every_reason_is_counted_and_the_first_claims_are_named() -> None:
    """Stale generation, a same-generation tie (both claimants lose), out of range, unknown topic
    and unsubscribed topic: each counted under its reason; examples sorted by member id."""
    raw = {
        "topics": {"orders": 4, "audit": 2},
        "members": [
            {"id": "a", "topics": ["orders"], "generation": 3, "owned": {"orders": [0, 1, 9], "gone": [2]}},
            {"id": "b", "topics": ["orders"], "generation": 2, "owned": {"orders": [0], "audit": [1]}},
            {"id": "c", "topics": ["orders"], "generation": 3, "owned": {"orders": [1, 2]}},
        ],
    }
    warnings = _warnings(raw)
    summary = [w for w in warnings if "claimed partitions ignored" in w]
    assert summary == [
        "6 claimed partitions ignored (1 stale generation, 2 claimed twice at the same generation, "
        "1 out of range, 1 unknown topic, 1 topic not subscribed)"
    ]
    named = [w for w in warnings if w.startswith("ignored claim:")]
    assert named == [
        "ignored claim: member a, topic gone, partition 2: unknown topic",
        "ignored claim: member a, topic orders, partition 1: another member claims it at the same generation 3",
        "ignored claim: member a, topic orders, partition 9: out of range (orders has 4 partitions)",
        "ignored claim: member b, topic audit, partition 1: topic not subscribed",
        "ignored claim: member b, topic orders, partition 0: stale generation 2 (another member claims it at 3)",
    ]


def test_a_duplicate_partition_in_one_list_is_one_claim_and_not_ignored() -> None:
    """A member listing a partition twice claims it once: nothing is ignored, it is owned."""
    raw = {"topics": {"t": 2}, "members": [{"id": "a", "topics": ["t"], "owned": {"t": [1, 1]}}]}
    index = index_consumer_problem(ConsumerProblem.model_validate(raw))
    assert index.warnings == ()
    assert index.owned == 1
    assert index.reported[0]["t"].tolist() == [1]


def test_no_claims_no_warnings() -> None:
    raw = {"topics": {"t": 3}, "members": [{"id": "a", "topics": ["t"]}, {"id": "b", "topics": ["t"]}]}
    assert _warnings(raw) == []


def test_claims_when_the_request_has_no_topics_at_all_are_ignored_as_unknown() -> None:
    """No topics in the request: every claim is on an unknown topic (a warning), not a crash."""
    raw = {"topics": {}, "members": [{"id": "0", "topics": [], "owned": {"x": [0]}}]}
    warnings = _warnings(raw)
    assert warnings[0] == "1 claimed partitions ignored (1 unknown topic)"
