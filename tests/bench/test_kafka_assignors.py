"""The JVM harness behind `bench.kafka_assignors` counts moves and loads the way stickyd does.

A group on one topic `t` of 6 partitions: m1 owned 0-2, m2 owned 3-5 (generation 3), m3 joins.
Counted by hand:
- balance is 2 partitions each, so m3 must take 2 partitions that m1 or m2 owned: a balanced,
  sticky answer moves exactly 2 (stickyd, Kafka's StickyAssignor, CooperativeStickyAssignor and
  the coordinator's UniformAssignor); the cooperative one withholds those 2 from its first answer
  and hands them out in one follow-up rebalance;
- the coordinator's RangeAssignor ignores previous owners and deals ranges in member-id order:
  m1 {0, 1}, m2 {2, 3}, m3 {4, 5}, so partition 2 leaves m1 and 4, 5 leave m2: 3 moves.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.kafka_assignors import KAFKA_ASSIGNORS, run_kafka, run_stickyd
from bench.layouts import write_problem_json
from tests.kafka.jvm import kafka_jars_built

JOIN = {
    "topics": {"t": 6},
    "members": [
        {"id": "m1", "topics": ["t"], "owned": {"t": [0, 1, 2]}, "generation": 3},
        {"id": "m2", "topics": ["t"], "owned": {"t": [3, 4, 5]}, "generation": 3},
        {"id": "m3", "topics": ["t"]},
    ],
}
HAND_COUNT = {"sticky": 2, "cooperative-sticky": 2, "uniform": 2, "range": 3}


@pytest.mark.skipif(not kafka_jars_built(), reason="Kafka jars not built (mvn package)")
def test_harness_moves_and_loads_match_a_hand_count(tmp_path: Path) -> None:
    """Each Kafka assignor's moves, loads and validity as counted by hand; stickyd on the same file."""
    problem_file = write_problem_json(JOIN, tmp_path / "join.json")
    outcomes = run_kafka(problem_file, list(KAFKA_ASSIGNORS), large=False, cap_s=120)
    for assignor, moves in HAND_COUNT.items():
        figures = outcomes[assignor].figures
        assert figures is not None, assignor
        assert (figures["moves"], figures["min_load"], figures["max_load"]) == (moves, 2, 2), assignor
        assert (figures["unassigned"], figures["duplicated"]) == (0, 0), assignor
    cooperative = outcomes["cooperative-sticky"].figures
    assert cooperative is not None
    assert (cooperative["withheld"], cooperative["follow_up_rebalances"]) == (2, 1)
    stickyd = run_stickyd(problem_file).figures
    assert stickyd is not None
    assert (stickyd["moves"], stickyd["min_load"], stickyd["max_load"]) == (2, 2, 2)
