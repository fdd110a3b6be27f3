"""`stickyd pipeline plan`: solve every group of a fleet snapshot and report on the fleet.

Outputs, under `--out`:
    assignments/   Parquet: group_id, member, topic, partition, role
    stats/         Parquet: one row per solved group (moves, balance, solver, optimal, fallback, time,
                   limited_by: what keeps it from a proven, balanced optimum, in words; with
                   --balance load, the bottleneck before and after: load_before, load_after,
                   load_lower_bound)
    errors/        JSON lines: every rejected row with its line number, group_id, field, reason and raw text
    member_traffic/ Parquet (with --metrics): group_id, member, partitions, rates and share of bytes/s

The group is `group_id` in every output (Kafka's own name for it).
    report.md + plan.png, or report.html
"""

from __future__ import annotations

import time
from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from stickyd.pipeline.inputs import read_metrics, read_rows
from stickyd.pipeline.load_plan import LoadPlan, default_lag, load_plan
from stickyd.pipeline.outcomes import split_results
from stickyd.pipeline.preflight import FLEET_COLUMNS, check_plan_inputs, input_format
from stickyd.pipeline.report import fleet_chart, plan_sections, write_report
from stickyd.pipeline.rows import RESULT_SCHEMA
from stickyd.pipeline.solving import RESULT_FIELDS, solve_frames, solve_over_http
from stickyd.pipeline.spark import TaskProgress, parallelism, to_pandas, watching_tasks
from stickyd.pipeline.traffic import member_traffic, partition_rates
from stickyd.solvers.time_policy import DEFAULT_TIME_LIMIT_MS

__all__ = ["FLEET_COLUMNS", "PlanOptions", "PlanSummary", "plan"]
"""Per group, where its problem sets none: the service's default, so both modes agree."""


@dataclass(frozen=True)
class PlanOptions:
    snapshot: str
    out: Path
    metrics: str | None = None
    service: str | None = None
    time_limit_ms: int = DEFAULT_TIME_LIMIT_MS
    input_format: str = "auto"
    report_format: str = "md"
    concurrency: int = 4
    batch_size: int = 64
    partitions: int | None = None
    balance: str | None = None
    """sets `options.balance` of every consumer group (count, per_topic, load)."""
    weights: str | None = None
    """with balance load: rate, lag or a JSON file (stickyd.pipeline.load_plan)."""
    lag: str | None = None
    """`--weights lag`: the snapshot's lag.jsonl (default: beside the snapshot)."""


@dataclass(frozen=True)
class PlanSummary:
    rows: int
    solved: int
    rejected: int
    wall_s: float
    report: Path
    first_rejected: tuple[str, ...] = ()
    """The first few rejected rows, one line each, by line number (all of them are in errors/)."""

    @property
    def rows_per_s(self) -> float:
        return self.rows / self.wall_s if self.wall_s > 0 else 0.0


def plan(
    spark: SparkSession,
    options: PlanOptions,
    say: Callable[[str], None] = lambda _: None,
    progress: TaskProgress | None = None,
) -> PlanSummary:
    """Solve the snapshot's groups (executors, or the driver over HTTP) and write every output.

    `progress` gets Spark's task counts while the job runs (the CLI draws them)."""
    started = time.monotonic()
    check_plan_inputs(options.snapshot, options.input_format, options.metrics, options.service)
    with watching_tasks(spark, progress) if progress is not None else nullcontext():
        metrics = None if options.metrics is None else read_metrics(spark, options.metrics)
        rows = read_rows(spark, options.snapshot, options.input_format, FLEET_COLUMNS, "snapshot")
        lag = options.lag or (default_lag(options.snapshot) if options.weights == "lag" else None)
        shaping = load_plan(spark, options.balance, options.weights, metrics, lag)
        split = split_results(_solve(spark, rows, options, shaping, say), options.out, ("group_id", "kind"))
        say(f"solved {split.total} rows in {time.monotonic() - started:.1f} s")
        stats = split.good.drop("assignment")
        assignments = split.good.select("group_id", F.explode("assignment").alias("a")).select(
            "group_id", "a.member", "a.topic", "a.partition", "a.role"
        )
        target = str(options.out)
        stats.write.mode("overwrite").parquet(f"{target}/stats")
        assignments.write.mode("overwrite").parquet(f"{target}/assignments")
        traffic = None
        if metrics is not None:
            say("aggregating traffic metrics")
            rates = partition_rates(metrics)
            traffic_frame = member_traffic(spark.read.parquet(f"{target}/assignments"), stats, rates)
            traffic_frame.write.mode("overwrite").parquet(f"{target}/member_traffic")
            traffic = to_pandas(spark.read.parquet(f"{target}/member_traffic"))
        stats_local = to_pandas(stats)
        split.release()
    wall = time.monotonic() - started
    summary = _summary(options, split.total, stats_local, len(split.errors), wall, parallelism(spark))
    unit = "row" if input_format(options.snapshot, options.input_format) == "parquet" else "line"
    report = write_report(
        options.out,
        options.report_format,
        "stickyd fleet plan",
        summary,
        plan_sections(stats_local, split.errors, traffic, unit),
        fleet_chart(stats_local) if not stats_local.empty else b"",
        "plan.png",
    )
    say(f"wrote {report}")
    first = split.first_rejected("group_id", unit)
    return PlanSummary(split.total, len(stats_local), len(split.errors), wall, report, first)


def _solve(
    spark: SparkSession, rows: DataFrame, options: PlanOptions, shaping: LoadPlan, say: Callable[[str], None]
) -> DataFrame:
    limit = options.time_limit_ms
    shape = shaping.apply if shaping.balance is not None else None
    if options.balance is not None:
        say(f"balance {options.balance}" + (f", weights from {options.weights}" if options.weights else ""))
    if options.service is None:
        slices = options.partitions or 4 * parallelism(spark)
        say(f"solving in the executors ({slices} slices, {parallelism(spark)} cores)")
        return rows.repartition(slices).mapInPandas(lambda frames: solve_frames(frames, limit, shape), RESULT_SCHEMA)
    say(f"solving through {options.service} from the driver")
    count = [0]

    def progress(n: int) -> None:
        count[0] += n
        if count[0] % (options.batch_size * 16) < n:
            say(f"  {count[0]} rows answered")

    lines = ((int(r["row"]), str(r["value"])) for r in rows.orderBy("row").toLocalIterator())
    records = [
        r.record()
        for r in solve_over_http(
            lines, options.service, limit, concurrency=options.concurrency, batch_size=options.batch_size,
            progress=progress, shape=shape,
        )
    ]  # fmt: skip
    tuples = [tuple(record[f] for f in RESULT_FIELDS) for record in records]
    return spark.createDataFrame(tuples, RESULT_SCHEMA)


def _summary(
    options: PlanOptions, total: int, stats: pd.DataFrame, rejected: int, wall: float, cores: int
) -> dict[str, Any]:
    solved = len(stats)
    return {
        "snapshot": options.snapshot,
        "solved by": options.service or f"executors (in-process solver, {cores} cores)",
        "rows": total,
        "groups solved": solved,
        "rows rejected": rejected,
        "proven optimal": int(stats["optimal"].sum()) if solved else 0,
        "fallbacks": int(stats["fallback"].sum()) if solved else 0,
        "partitions moved": int(stats["moves"].sum()) if solved else 0,
        "wall time": f"{wall:.1f} s ({total / wall if wall else 0:.0f} rows/s)",
    }
