"""`plan --balance load --weights rate|lag|FILE`: what each consumer group's partitions weigh,
set on its problem before it is solved, and the bottleneck it had before.

- `rate`: each partition's bytes/s over the traffic metrics' window (`--metrics`), rounded to an
  integer; a partition without metrics weighs 0 (silent), a topic without any is left out (it
  weighs the mean, as docs/wire-format.md says). The same for every group reading the topic.
- `lag`: each partition's lag in the group's own `lag.jsonl` (written by `stickyd snapshot`
  beside the fleet snapshot, or `--lag`); an uncommitted partition weighs 0, a topic the file
  does not name is left out (it weighs the mean, as docs/wire-format.md says).
- FILE: a JSON object `{group_id: {topic: weight or [weights]}}`, sent as it is (a bad entry
  rejects its group's row naming the field, as any bad problem does).

The weights are gathered in the driver and travel with the solve function to the executors.
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from stickyd.pipeline.preflight import InputError, check_exists
from stickyd.pipeline.traffic import partition_rates

WEIGHT_SOURCES = ("rate", "lag")
LAG_COLUMNS = ("group_id", "topic", "partition", "lag")
PartitionMap = dict[str, dict[int, float]]


@dataclass(frozen=True)
class LoadPlan:
    """What `plan` sets on every consumer problem: `options.balance`, and weights when asked."""

    balance: str | None = None
    by_topic: PartitionMap | None = None
    """`rate`: topic -> partition -> weight, for every group."""
    by_group: dict[str, dict[str, Any]] = field(default_factory=dict)
    """`lag` (topic -> partition -> weight) or FILE (topic -> weight(s)), per group."""

    def apply(self, group_id: str, problem: dict[str, Any]) -> dict[str, Any]:
        """`problem` with this plan's balance and the group's weights (when it has any)."""
        if self.balance is None:
            return problem
        options = problem.get("options")
        shaped = {**problem, "options": {**(options if isinstance(options, dict) else {}), "balance": self.balance}}
        topics = problem.get("topics")
        weights = self._weights(group_id, topics if isinstance(topics, dict) else {})
        if weights is not None:
            shaped["partition_weights"] = weights
        return shaped

    def _weights(self, group_id: str, topics: dict[str, Any]) -> dict[str, Any] | None:
        if self.by_topic is not None:
            return _lists(self.by_topic, topics)
        given = self.by_group.get(group_id)
        if given is None:
            return None
        if all(isinstance(v, dict) for v in given.values()):
            return _lists(given, topics)
        return given


def _lists(per_partition: dict[str, Any], topics: dict[str, Any]) -> dict[str, Any] | None:
    weights: dict[str, Any] = {}
    for topic, count in topics.items():
        if not isinstance(count, int) or topic not in per_partition:
            continue
        known = per_partition.get(topic, {})
        weights[topic] = [int(round(known.get(p, 0))) for p in range(count)]
    return weights or None


def load_plan(
    spark: SparkSession, balance: str | None, weights: str | None, metrics: DataFrame | None, lag: str | None
) -> LoadPlan:
    """The plan for `--balance` and `--weights`; InputError naming the option that does not fit."""
    check_load_options(balance, weights, metrics is not None, lag)
    if weights is None:
        return LoadPlan(balance)
    if weights == "rate":
        assert metrics is not None
        rates = partition_rates(metrics).select("topic", "partition", "bytes_per_s").collect()
        by_topic: PartitionMap = defaultdict(dict)
        for row in rates:
            by_topic[row["topic"]][int(row["partition"])] = float(row["bytes_per_s"] or 0.0)
        return LoadPlan(balance, by_topic=dict(by_topic))
    if weights == "lag":
        return LoadPlan(balance, by_group=_read_lag(spark, lag))
    return LoadPlan(balance, by_group=read_weights_file(weights))


def check_load_options(balance: str | None, weights: str | None, metrics: bool, lag: str | None) -> None:
    """What `--balance`/`--weights` refuse before Spark starts (InputError naming the option)."""
    if weights is None:
        return
    if balance != "load":
        raise InputError("--weights: weights count only with --balance load")
    if weights == "rate" and not metrics:
        raise InputError("--weights rate: needs --metrics (the partitions' traffic)")
    if weights == "lag":
        if lag is None:
            raise InputError("--weights lag: needs --lag (the snapshot's lag.jsonl)")
        check_exists(lag, "--lag")
    elif weights not in WEIGHT_SOURCES:
        read_weights_file(weights)


def default_lag(snapshot: str) -> str:
    """`lag.jsonl` beside the snapshot, where `stickyd snapshot` writes it."""
    folder, slash, _ = snapshot.rstrip("/").rpartition("/")  # a URL (hdfs://, s3a://) keeps its scheme
    return f"{folder}{slash}lag.jsonl" if slash else "lag.jsonl"


def _read_lag(spark: SparkSession, path: str | None) -> dict[str, dict[str, Any]]:
    assert path is not None
    frame = spark.read.option("mode", "FAILFAST").json(path)
    if missing := [c for c in LAG_COLUMNS if c not in frame.columns]:
        raise InputError(f"--lag: {path}: missing column(s) {', '.join(missing)} (need {', '.join(LAG_COLUMNS)})")
    rows = frame.filter(F.col("lag").isNotNull()).select(*LAG_COLUMNS).collect()
    by_group: dict[str, dict[str, Any]] = defaultdict(lambda: defaultdict(dict))
    for row in rows:
        by_group[row["group_id"]][row["topic"]][int(row["partition"])] = max(float(row["lag"]), 0.0)
    return {g: dict(t) for g, t in by_group.items()}


def read_weights_file(path: str) -> dict[str, dict[str, Any]]:
    """`{group_id: {topic: weight or [weights]}}` from a JSON file; InputError saying what is wrong."""
    file = Path(path)
    if not file.is_file():
        raise InputError(f"--weights: {path}: not rate, lag or a JSON file of {{group: {{topic: [weights]}}}}")
    try:
        data = json.loads(file.read_text())
    except (ValueError, UnicodeDecodeError) as error:
        raise InputError(f"--weights: {path}: not valid JSON ({error})") from None
    if not isinstance(data, dict) or not all(isinstance(v, dict) for v in data.values()):
        raise InputError(f"--weights: {path}: expected {{group: {{topic: weight or [weights]}}}}")
    return data
