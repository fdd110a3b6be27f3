"""The Kafka-like layout generators of bench/layouts.py: valid contract requests, Kafka's own
round-robin and range shapes, and the claim conflicts the `stale-dead` layout promises."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from bench.layouts import EVENTS, LAYOUTS, SHAPES, kafka_like_problem, write_problem_json
from stickyd.models import ConsumerProblem
from stickyd.models.consumer.index import index_consumer_problem
from stickyd.models.consumer.validation import validate_consumer_solution
from stickyd.solvers import solve_consumer

CASES = [
    (layout, shape, EVENTS[i % len(EVENTS)]) for i, (layout, shape) in enumerate(itertools.product(LAYOUTS, SHAPES))
]


@pytest.mark.parametrize(("layout", "shape", "event"), CASES)
def test_every_layout_is_a_contract_request_that_solves_validly(layout: str, shape: str, event: str) -> None:
    """Each layout x shape x event parses as the contract and the optimal answer validates."""
    raw = kafka_like_problem(3_000, 40, layout=layout, shape=shape, event=event, seed=3)
    problem = ConsumerProblem.model_validate(raw)
    solution = solve_consumer(problem)
    assert validate_consumer_solution(problem, solution) == []
    assert solution.stats.owned > 0
    expected_members = 40
    assert len(problem.members) == expected_members


def test_roundrobin_layout_deals_partitions_like_kafkas_roundrobin_assignor() -> None:
    """Equal subscriptions: partition i of the topic-sorted list goes to sorted member i mod M
    (before noise), so almost every member owns one or more partitions of every topic."""
    raw = kafka_like_problem(2_000, 100, layout="roundrobin", shape="equal", event="partitions-added", seed=1)
    first = raw["members"][0]
    assert first["id"] == "consumer-00000"
    # 10 topics x 200 partitions over 100 members: member 0 owns partitions 0 and 100 of each topic
    hits = sum(1 for parts in first["owned"].values() for p in parts if p in (0, 100))
    assert hits >= 17  # 20 before 3 % shuffled noise
    assert len(first["owned"]) == 10


def test_range_layout_gives_remainders_to_the_first_members() -> None:
    """Range leftovers: with more members than partitions per topic the first members own a
    partition of every topic and the last ones little."""
    raw = kafka_like_problem(2_000, 300, layout="range", shape="equal", event="partitions-added", seed=1)
    loads = [sum(len(v) for v in m.get("owned", {}).values()) for m in raw["members"]]
    assert sum(loads[:100]) > 5 * sum(loads[-100:])


def test_stale_dead_layout_has_ignored_claims_and_unowned_partitions(tmp_path: Path) -> None:
    """Older-generation claims on others' partitions and same-generation ties are ignored (warned),
    and the dead members' partitions are claimed by no one."""
    raw = kafka_like_problem(4_000, 100, layout="stale-dead", shape="equal", event="join", seed=2)
    generations = {m.get("generation") for m in raw["members"]}
    assert {4, 5} <= generations
    index = index_consumer_problem(ConsumerProblem.model_validate(raw))
    assert any("ignored" in w for w in index.warnings)
    assert index.owned < 4_000 * 0.99
    path = write_problem_json(raw, tmp_path / "group.json")
    assert ConsumerProblem.model_validate_json(path.read_bytes()) == ConsumerProblem.model_validate(raw)
