"""Synthetic inputs: seeded, within the fleet's documented shapes, and every row fits the contract."""

from __future__ import annotations

import json
from collections import Counter

from stickyd.pipeline.churn.traces import ChurnTrace
from stickyd.pipeline.generate import FleetShape, fleet_rows, metrics_rows, trace_rows
from stickyd.pipeline.rows import parse_row


def test_same_seed_same_fleet_and_another_seed_differs() -> None:
    shape = FleetShape(groups=30)
    assert list(fleet_rows(3, shape)) == list(fleet_rows(3, shape))
    assert list(fleet_rows(3, shape)) != list(fleet_rows(4, shape))


def test_fleet_rows_parse_and_cover_the_shapes() -> None:
    rows = list(fleet_rows(7, FleetShape(groups=300)))
    kinds = Counter(row["kind"] for row in rows)
    assert kinds["consumer"] > kinds["streams"] > 0
    sizes, topics, equal, joins, standbys = [], [], 0, 0, 0
    for number, row in enumerate(rows, start=1):
        parsed = parse_row(number, json.dumps(row))
        problem = row["problem"]
        if parsed.kind == "consumer":
            sizes.append(len(problem["members"]))
            topics.append(len(problem["topics"]))
            equal += len({tuple(m["topics"]) for m in problem["members"]}) == 1
            joins += bool(problem.get("copartitioned"))
        else:
            standbys += problem["config"]["num_standby_replicas"] > 0
    assert min(sizes) >= 2 and max(sizes) <= 2000 and max(sizes) > 100
    assert min(topics) >= 1 and max(topics) <= 500 and max(topics) > 50
    assert 0 < equal < len(sizes) and joins > 0 and standbys > 0


def test_metrics_cover_every_partition_of_the_topic_pool() -> None:
    rows = list(metrics_rows(7, groups=10, minutes=3))
    per_topic = Counter(r["topic"] for r in rows)
    assert all(count % 3 == 0 for count in per_topic.values())
    assert all(r["bytes"] >= r["records"] > 0 for r in rows)


def test_traces_are_valid_and_use_every_event_type() -> None:
    traces = [ChurnTrace.model_validate(t) for t in trace_rows(7, traces=50, events=20)]
    assert all(len(t.events) == 20 for t in traces)
    assert {e.type for t in traces for e in t.events} == {"join", "leave", "crash", "scale_out", "partitions_added"}
