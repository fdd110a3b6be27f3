"""Churn replay: each event's answer feeds the next; checked against a hand-computed sequence."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from stickyd.pipeline.churn.replay import ReplayOptions, replay
from stickyd.pipeline.churn.replay_core import parse_trace, replay_trace
from stickyd.pipeline.churn.traces import ChurnTrace
from stickyd.pipeline.spark import to_pandas

# t has 6 partitions; a and b start; c joins; a leaves; t grows to 8.
HAND_TRACE = {
    "trace_id": "hand",
    "topics": {"t": 6},
    "members": [{"id": "a", "topics": ["t"]}, {"id": "b", "topics": ["t"]}],
    "events": [
        {"type": "join", "members": [{"id": "c", "topics": ["t"]}]},
        {"type": "leave", "member_ids": ["a"]},
        {"type": "partitions_added", "topics": {"t": 8}},
    ],
}

# Worked by hand (moves = owned partitions that changed owner, as the contract counts them):
#   range:      a0-2 b3-5 | a0-1 b2-3 c4-5 (a keeps 0,1; b keeps 3: 3 moves) | b0-2 c3-5 (b keeps 2, c keeps
#               4,5 of 4 owned: 1) | b0-3 c4-7 (b keeps 0-2, c keeps 4,5 of 6: 1)
#   roundrobin: a024 b135 | a03 b14 c25 (a keeps 0, b keeps 1: 4) | b024 c135 (b keeps 4, c keeps 5: 2)
#               | b0246 c1357 (all 6 kept: 0)
#   optimal:    3/3, then a and b hand one each to c (2), a's two go one to b and one to c (0), the two
#               new partitions one each (0); loads even at every step.
EXPECTED_MOVES = {
    "range": [0, 3, 1, 1],
    "roundrobin": [0, 4, 2, 0],
    "optimal": [0, 2, 0, 0],
    "sticky": [0, 2, 0, 0],
    "cooperative": [0, 2, 0, 0],
}
EXPECTED_BALANCE = {"range": [0, 0, 0, 0], "roundrobin": [0, 0, 0, 0], "optimal": [0, 0, 0, 0]}
# eager: every surviving member gives up all it owned; cooperative: only what changes owner
EXPECTED_REVOKED = {"optimal": [0, 6, 4, 6], "cooperative": [0, 2, 0, 0]}


def test_hand_computed_sequence() -> None:
    steps = replay_trace(ChurnTrace.model_validate(HAND_TRACE))
    for strategy, moves in EXPECTED_MOVES.items():
        mine = [s for s in steps if s.strategy == strategy]
        assert [s.event for s in mine] == ["initial", "join", "leave", "partitions_added"]
        assert [s.moves for s in mine] == moves, strategy
        assert [s.members for s in mine] == [2, 3, 2, 2]
        assert [s.partitions for s in mine] == [6, 6, 6, 8]
    for strategy, balance in EXPECTED_BALANCE.items():
        assert [s.balance for s in steps if s.strategy == strategy] == balance
    for strategy, revoked in EXPECTED_REVOKED.items():
        assert [s.revoked for s in steps if s.strategy == strategy] == revoked


@pytest.mark.parametrize(
    ("trace", "field"),
    [
        ({**HAND_TRACE, "events": [{"type": "leave", "member_ids": ["zed"]}]}, "events[0].member_ids[0]"),
        ({**HAND_TRACE, "events": [{"type": "join", "members": [{"id": "a", "topics": []}]}]}, "events[0].members[0].id"),  # noqa: E501
        ({**HAND_TRACE, "events": [{"type": "partitions_added", "topics": {"t": 3}}]}, "events[0].topics.t"),
        ({**HAND_TRACE, "events": [{"type": "join"}]}, "events[0].members"),
        ({**HAND_TRACE, "events": [{"type": "reboot"}]}, "events[0].type"),
    ],
)  # fmt: skip
def test_bad_traces_name_the_field(trace: dict[str, object], field: str) -> None:
    step = parse_trace(3, json.dumps(trace))
    assert not isinstance(step, ChurnTrace)
    assert (step.row, step.trace_id, step.error_field) == (3, "hand", field)


def test_spark_replay_writes_the_same_steps_and_reports_bad_traces(spark: SparkSession, tmp_path: Path) -> None:
    traces = tmp_path / "traces.jsonl"
    bad = {**HAND_TRACE, "trace_id": "broken", "events": [{"type": "crash", "member_ids": ["nobody"]}]}
    traces.write_text("\n".join([json.dumps(HAND_TRACE), json.dumps(bad), "{oops"]) + "\n")
    summary = replay(spark, ReplayOptions(traces=str(traces), out=tmp_path / "out"))
    assert (summary.traces, summary.steps, summary.rejected) == (1, 20, 2)
    steps = to_pandas(spark.read.parquet(str(tmp_path / "out" / "steps")))
    for strategy, moves in EXPECTED_MOVES.items():
        assert steps[steps["strategy"] == strategy].sort_values("step")["moves"].tolist() == moves
    errors = [
        json.loads(line) for f in (tmp_path / "out" / "errors").glob("*.json") for line in f.read_text().splitlines()
    ]
    assert [(e["row"], e.get("trace_id"), e["error_field"]) for e in errors] == [
        (2, "broken", "events[0].member_ids[0]"),
        (3, None, "row"),
    ]
    report = (tmp_path / "out" / "report.md").read_text()
    assert "| optimal | 2 |" in report and "| range | 5 |" in report  # total moves per strategy
    assert (tmp_path / "out" / "replay.png").read_bytes()[:4] == b"\x89PNG"
