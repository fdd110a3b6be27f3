"""`stickyd pipeline replay`: churn traces replayed with every strategy, in the executors.

Outputs, under `--out`: `steps/` (Parquet, one row per trace x strategy x event), `errors/`
(JSON lines, rejected traces with their reason), `report.md` + `replay.png` (cumulative moves
per strategy), or `report.html`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
from pyspark.sql import SparkSession

from stickyd.pipeline.churn.replay_core import REPLAY_SCHEMA, STEP_FIELDS, STRATEGIES, replay_line
from stickyd.pipeline.inputs import read_rows
from stickyd.pipeline.outcomes import records_per_row, split_results
from stickyd.pipeline.preflight import TRACE_COLUMNS, check_rows_input
from stickyd.pipeline.report import Section, new_figure, png_bytes, rejected_rows, write_report
from stickyd.pipeline.spark import TaskProgress, parallelism, to_pandas, watching_tasks
from stickyd.solvers.time_policy import DEFAULT_TIME_LIMIT_MS


@dataclass(frozen=True)
class ReplayOptions:
    traces: str
    out: Path
    strategies: tuple[str, ...] = STRATEGIES
    time_limit_ms: int = DEFAULT_TIME_LIMIT_MS
    input_format: str = "auto"
    report_format: str = "md"
    partitions: int | None = None


@dataclass(frozen=True)
class ReplaySummary:
    traces: int
    steps: int
    rejected: int
    wall_s: float
    report: Path
    first_rejected: tuple[str, ...] = ()


def replay_frames(frames: Iterator[pd.DataFrame], strategies: tuple[str, ...], limit: int) -> Iterator[pd.DataFrame]:
    """`mapInPandas` body: each trace replayed with every strategy, one record per rebalance."""
    return records_per_row(frames, lambda row, raw: replay_line(row, raw, strategies, limit), STEP_FIELDS)


def replay(
    spark: SparkSession,
    options: ReplayOptions,
    say: Callable[[str], None] = lambda _: None,
    progress: TaskProgress | None = None,
) -> ReplaySummary:
    started = time.monotonic()
    unknown = [s for s in options.strategies if s not in STRATEGIES]
    if unknown:
        raise ValueError(f"--strategy: unknown {', '.join(unknown)} (choose from {', '.join(STRATEGIES)})")
    check_rows_input(options.traces, options.input_format, "traces", TRACE_COLUMNS)
    with watching_tasks(spark, progress) if progress is not None else nullcontext():
        rows = read_rows(spark, options.traces, options.input_format, TRACE_COLUMNS, "traces")
        slices = options.partitions or 4 * parallelism(spark)
        strategies, limit = options.strategies, options.time_limit_ms
        say(f"replaying with {', '.join(strategies)} in the executors ({slices} slices)")
        steps = rows.repartition(slices).mapInPandas(lambda f: replay_frames(f, strategies, limit), REPLAY_SCHEMA)
        split = split_results(steps, options.out, ("trace_id",))
        say(f"replayed {split.total} rows in {time.monotonic() - started:.1f} s")
        split.good.write.mode("overwrite").parquet(f"{options.out}/steps")
        local = to_pandas(spark.read.parquet(f"{options.out}/steps"))
        split.release()
    errors_local = split.errors
    wall = time.monotonic() - started
    traces = int(local["trace_id"].nunique()) if not local.empty else 0
    summary = {
        "traces": options.traces,
        "traces replayed": traces,
        "traces rejected": len(errors_local),
        "rebalances": len(local),
        "wall time": f"{wall:.1f} s",
    }
    report = write_report(
        options.out, options.report_format, "stickyd churn replay", summary,
        replay_sections(local, errors_local), cumulative_moves_chart(local, strategies), "replay.png",
    )  # fmt: skip
    say(f"wrote {report}")
    return ReplaySummary(traces, len(local), len(errors_local), wall, report, split.first_rejected("trace_id"))


def replay_sections(steps: pd.DataFrame, errors: pd.DataFrame) -> list[Section]:
    if steps.empty:
        return [("By strategy", "no trace was replayed"), rejected_rows(errors, "trace_id", "line", "traces")]
    sections: list[Section] = []
    by_strategy = steps.groupby("strategy", sort=False).agg(
        moves=("moves", "sum"), revoked=("revoked", "sum"), worst_balance=("balance", "max"),
        mean_balance=("balance", "mean"), mean_ms=("time_ms", "mean"), max_ms=("time_ms", "max"),
    )  # fmt: skip
    sections.append(("By strategy (all events)", by_strategy.reset_index()))
    by_event = steps.groupby(["event", "strategy"], sort=False).agg(
        rebalances=("moves", "count"), moves=("moves", "sum"), revoked=("revoked", "sum"),
        mean_balance=("balance", "mean"), mean_ms=("time_ms", "mean"),
    )  # fmt: skip
    sections.append(("By event type and strategy", by_event.reset_index()))
    sections.append(rejected_rows(errors, "trace_id", "line", "traces"))
    return sections


def cumulative_moves(steps: pd.DataFrame) -> pd.DataFrame:
    """Moves summed over traces per event step, accumulated: one column per strategy."""
    per_step = steps.pivot_table(index="step", columns="strategy", values="moves", aggfunc="sum", fill_value=0)
    return per_step.sort_index().cumsum()


def cumulative_moves_chart(steps: pd.DataFrame, strategies: tuple[str, ...]) -> bytes:
    fig, ax = new_figure(1, (8, 4.5))
    if not steps.empty:
        table = cumulative_moves(steps)
        for strategy in strategies:
            if strategy in table.columns:
                ax.plot(table.index, table[strategy], marker=".", label=strategy)
        ax.legend()
    ax.set_title("cumulative partitions moved across the traces")
    ax.set_xlabel("event")
    ax.set_ylabel("partitions moved")
    return png_bytes(fig)
