"""`plan --balance load --weights rate|lag|FILE`: the weights reach every consumer group's problem,
and the stats and the report give each group's bottleneck before and after, and its moves."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from pyspark.sql import SparkSession

from stickyd.cli.child_service import ServiceProcess
from stickyd.models import ConsumerProblem, parse
from stickyd.pipeline.bottleneck import bottleneck_before
from stickyd.pipeline.load_plan import LoadPlan, check_load_options, default_lag
from stickyd.pipeline.plan import PlanOptions, plan
from stickyd.pipeline.preflight import InputError
from stickyd.pipeline.spark import to_pandas

HOT_WEIGHTS = [900, 100, 100, 100]
# `a` owns the hot partition and one more: bottleneck 1000; the best is 900 (partition 0 alone),
# and 1000 is over 5% above it, so one partition moves
HOT = {
    "topics": {"t": 4},
    "members": [
        {"id": "a", "topics": ["t"], "owned": {"t": [0, 1]}, "generation": 1},
        {"id": "b", "topics": ["t"], "owned": {"t": [2, 3]}, "generation": 1},
    ],
}
PLAIN = {"topics": {"u": 2}, "members": [{"id": "x", "topics": ["u"]}, {"id": "y", "topics": ["u"]}]}


@pytest.fixture(scope="module")
def snapshot(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two consumer groups, a Streams app, the traffic of `t` and the snapshot's lag beside it."""
    folder = tmp_path_factory.mktemp("load-snapshot")
    streams = {"subtopologies": [{"id": "0", "partitions": 2}], "clients": [{"id": "c"}]}
    rows = [
        {"group_id": "hot", "kind": "consumer", "problem": HOT},
        {"group_id": "plain", "kind": "consumer", "problem": PLAIN},
        {"group_id": "app", "kind": "streams", "problem": streams},
    ]
    (folder / "fleet.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    metrics = [
        {"topic": "t", "partition": p, "minute": "2026-11-01T00:00:00", "records": w, "bytes": w * 60}
        for p, w in enumerate(HOT_WEIGHTS)
    ]
    (folder / "metrics.jsonl").write_text("".join(json.dumps(m) + "\n" for m in metrics))
    lag = [{"group_id": "hot", "topic": "t", "partition": p, "lag": w} for p, w in enumerate(HOT_WEIGHTS)]
    lag.append({"group_id": "plain", "topic": "u", "partition": 0, "lag": None})
    (folder / "lag.jsonl").write_text("".join(json.dumps(r) + "\n" for r in lag))
    return folder


def test_the_plan_sets_balance_and_fits_rates_to_each_group() -> None:
    plan_ = LoadPlan("load", by_topic={"t": {0: 899.6, 2: 3.2}})
    shaped = plan_.apply("hot", {**HOT, "options": {"strategy": "optimal"}})
    assert shaped["options"] == {"strategy": "optimal", "balance": "load"}
    assert shaped["partition_weights"] == {"t": [900, 0, 3, 0]}
    from_file = LoadPlan("load", by_group={"hot": {"t": 7}}).apply("plain", PLAIN)
    assert "partition_weights" not in from_file and from_file["options"] == {"balance": "load"}


def test_the_lag_is_looked_for_beside_the_snapshot() -> None:
    assert default_lag("snap/fleet.jsonl") == "snap/lag.jsonl"
    assert default_lag("s3a://bucket/snap/fleet.parquet/") == "s3a://bucket/snap/lag.jsonl"
    assert default_lag("fleet.jsonl") == "lag.jsonl"
    assert LoadPlan("per_topic").apply("g", PLAIN)["options"] == {"balance": "per_topic"}


def test_the_bottleneck_before_is_what_the_members_own_now() -> None:
    problem = parse(ConsumerProblem, {**HOT, "partition_weights": {"t": HOT_WEIGHTS}, "options": {"balance": "load"}})
    assert bottleneck_before(problem) == 1000.0
    bigger = {**HOT, "members": [{**HOT["members"][0], "capacity": 4}, HOT["members"][1]]}
    weighed = {**bigger, "partition_weights": {"t": HOT_WEIGHTS}, "options": {"balance": "load"}}
    problem = parse(ConsumerProblem, weighed)
    assert bottleneck_before(problem) == 250.0


@pytest.mark.parametrize(
    ("balance", "weights", "metrics", "message"),
    [
        (None, "rate", True, "--weights: weights count only with --balance load"),
        ("load", "rate", False, "--weights rate: needs --metrics"),
        ("load", "no-such-file.json", False, "--weights: no-such-file.json: not rate, lag or a JSON file"),
    ],
)
def test_weights_that_cannot_be_used_are_refused_before_spark(
    balance: str | None, weights: str, metrics: bool, message: str
) -> None:
    with pytest.raises(InputError, match=message):
        check_load_options(balance, weights, metrics, None)


def planned(spark: SparkSession, snapshot: Path, out: Path, **options: Any) -> dict[str, dict[str, Any]]:
    plan(spark, PlanOptions(snapshot=str(snapshot / "fleet.jsonl"), out=out, balance="load", **options))
    stats = to_pandas(spark.read.parquet(str(out / "stats")))
    return {row["group_id"]: row for row in stats.to_dict("records")}


@pytest.mark.parametrize("source", ["rate", "lag", "file"])
def test_a_fleet_planned_by_load_reports_the_bottleneck_before_and_after(
    spark: SparkSession, snapshot: Path, tmp_path: Path, source: str
) -> None:
    """Weights from the traffic's bytes/s, the snapshot's lag or a file give `hot` the same
    weights: its bottleneck falls from 1000 to the best, 900, by one move."""
    options: dict[str, Any] = {"weights": source}
    if source == "rate":
        options["metrics"] = str(snapshot / "metrics.jsonl")
    elif source == "file":
        weights = tmp_path / "weights.json"
        weights.write_text(json.dumps({"hot": {"t": HOT_WEIGHTS}}))
        options["weights"] = str(weights)
    stats = planned(spark, snapshot, tmp_path / "out", **options)
    hot = stats["hot"]
    assert (hot["load_before"], hot["load_after"], hot["load_lower_bound"], hot["moves"]) == (1000.0, 900.0, 900.0, 1)
    assert stats["plain"]["load_after"] == 1.0 and pd.isna(stats["app"]["load_before"])
    report = (tmp_path / "out" / "report.md").read_text()
    assert "Load: the bottleneck before and after (2 groups" in report


def test_the_service_mode_plans_by_load_as_the_executors_do(
    spark: SparkSession, snapshot: Path, tmp_path: Path, service: ServiceProcess
) -> None:
    stats = planned(spark, snapshot, tmp_path / "out", weights="lag", service=service.url)
    hot = stats["hot"]
    assert (hot["load_before"], hot["load_after"], hot["moves"]) == (1000.0, 900.0, 1)


def test_a_weights_file_entry_that_does_not_fit_rejects_its_group_naming_the_field(
    spark: SparkSession, snapshot: Path, tmp_path: Path
) -> None:
    weights = tmp_path / "weights.json"
    weights.write_text(json.dumps({"hot": {"t": [1, 2]}}))
    out = tmp_path / "out"
    stats = planned(spark, snapshot, out, weights=str(weights))
    assert "hot" not in stats and "plain" in stats
    errors = [json.loads(line) for f in (out / "errors").glob("*.json") for line in f.read_text().splitlines()]
    assert [(e["group_id"], e["error_field"]) for e in errors] == [("hot", "problem.partition_weights.t")]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--weights", "rate"), "stickyd: --weights: weights count only with --balance load"),
        (("--balance", "load", "--weights", "rate"), "stickyd: --weights rate: needs --metrics"),
        (("--balance", "load", "--weights", "lag"), "stickyd: --lag: LAG: no such file or directory"),
        (("--balance", "weight"), "Invalid value for '--balance'"),
    ],
)
def test_the_command_refuses_weights_it_cannot_use_in_one_line(
    tmp_path: Path, args: tuple[str, ...], message: str
) -> None:
    fleet = tmp_path / "fleet.jsonl"
    fleet.write_text(json.dumps({"group_id": "hot", "kind": "consumer", "problem": HOT}) + "\n")
    command = [sys.executable, "-m", "stickyd.cli", "pipeline", "plan", str(fleet), "--out", str(tmp_path / "out")]
    result = subprocess.run([*command, *args], capture_output=True, text=True, timeout=60, check=False)
    assert result.returncode == 2
    assert message.replace("LAG", str(tmp_path / "lag.jsonl")) in result.stderr, result.stderr
    assert not (tmp_path / "out").exists()
