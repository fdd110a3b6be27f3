"""`stickyd pipeline ...`: the PySpark jobs from the command line (needs the `pipeline` extra)."""

from __future__ import annotations

import importlib.util
import time
from enum import StrEnum
from pathlib import Path
from typing import Annotated, NoReturn

import typer
from rich.console import Console

pipeline_app = typer.Typer(
    help="Fleet-wide planning and churn replay on Spark (local mode or spark-submit).", no_args_is_help=True
)
console = Console(stderr=True, soft_wrap=True)


class InputFormat(StrEnum):
    auto = "auto"
    jsonl = "jsonl"
    parquet = "parquet"


class ReportFormat(StrEnum):
    md = "md"
    html = "html"


def _fail(message: str) -> NoReturn:
    typer.echo(f"stickyd: {message}", err=True)
    raise typer.Exit(code=2)


def _first_line(error: Exception) -> str:
    text = str(error).strip().splitlines()
    return f"{type(error).__name__}: {text[0] if text else ''}"


def _say(message: str) -> None:
    console.print(f"[dim]{time.strftime('%H:%M:%S')}[/dim] {message}")


def _need_spark(*inputs: tuple[str, str | None]) -> None:
    """Refuse before a JVM starts: pyspark missing, or an input that is not there."""
    if importlib.util.find_spec("pyspark") is None:
        _fail("the pipeline needs pyspark: pip install 'stickyd[pipeline]' (and Java 17)")
    for name, path in inputs:
        if path is not None and "://" not in path and not Path(path).exists():
            _fail(f"{name}: {path}: no such file or directory")


Master = Annotated[str, typer.Option(help="Spark master; 'submit' keeps what spark-submit set")]
TimeLimit = Annotated[int, typer.Option(min=1, help="per group, where its problem sets none")]


@pipeline_app.command()
def generate(
    out: Annotated[Path, typer.Argument(help="folder for fleet, metrics and traces")],
    groups: Annotated[int, typer.Option(min=1, help="groups in the fleet snapshot")] = 1000,
    traces: Annotated[int, typer.Option(min=0, help="churn traces")] = 100,
    events: Annotated[int, typer.Option(min=1, help="events per trace")] = 20,
    minutes: Annotated[int, typer.Option(min=1, help="minutes of traffic metrics")] = 10,
    seed: Annotated[int, typer.Option(help="same seed, same files")] = 7,
    fleet_format: Annotated[InputFormat, typer.Option(help="fleet snapshot as jsonl or parquet")] = InputFormat.jsonl,
) -> None:
    """Write a seeded synthetic fleet snapshot, traffic metrics and churn traces."""
    from pipeline.generate import FleetShape, fleet_rows, metrics_rows, trace_rows, write_jsonl, write_parquet

    out.mkdir(parents=True, exist_ok=True)
    with console.status(f"generating {groups} groups"):
        rows = fleet_rows(seed, FleetShape(groups=groups))
        if fleet_format == InputFormat.parquet:
            written = write_parquet(out / "fleet.parquet", rows, stringify=("problem",))
            fleet = out / "fleet.parquet"
        else:
            written = write_jsonl(out / "fleet.jsonl", rows)
            fleet = out / "fleet.jsonl"
    _say(f"{fleet}: {written} groups")
    with console.status("generating traffic metrics"):
        count = write_parquet(out / "metrics.parquet", metrics_rows(seed, groups, minutes))
    _say(f"{out / 'metrics.parquet'}: {count} partition-minutes")
    with console.status(f"generating {traces} churn traces"):
        count = write_jsonl(out / "traces.jsonl", trace_rows(seed, traces, events))
    _say(f"{out / 'traces.jsonl'}: {count} traces of {events} events")


@pipeline_app.command()
def plan(
    snapshot: Annotated[str, typer.Argument(help="fleet snapshot: JSON lines or Parquet (group_id, kind, problem)")],
    out: Annotated[Path, typer.Option(help="output folder")] = Path("plan-out"),
    metrics: Annotated[str | None, typer.Option(help="traffic: topic, partition, minute, records, bytes")] = None,
    service: Annotated[str | None, typer.Option(help="solve through this stickyd service from the driver")] = None,
    master: Master = "local[*]",
    time_limit_ms: TimeLimit = 2000,
    input_format: Annotated[InputFormat, typer.Option("--format")] = InputFormat.auto,
    report: Annotated[ReportFormat, typer.Option(help="report as Markdown (+ PNG) or one HTML file")] = ReportFormat.md,
    concurrency: Annotated[int, typer.Option(min=1, help="--service: requests in flight")] = 4,
    batch_size: Annotated[int, typer.Option(min=1, help="--service: rows per batch")] = 64,
) -> None:
    """Solve every group of a fleet snapshot; write assignments, stats, errors and a report."""
    _need_spark(("snapshot", snapshot), ("--metrics", metrics))
    from pipeline.inputs import InputError
    from pipeline.plan import PlanOptions
    from pipeline.plan import plan as run_plan
    from pipeline.solving import ServiceUnavailable
    from pipeline.spark import spark_session

    options = PlanOptions(
        snapshot, out, metrics, service, time_limit_ms, input_format.value, report.value, concurrency, batch_size
    )
    session = spark_session(None if master == "submit" else master)
    try:
        summary = run_plan(session, options, say=_say)
    except (InputError, ServiceUnavailable, ValueError) as error:
        _fail(str(error))
    except Exception as error:  # Spark's own failures (unreadable Parquet, a lost executor): one line
        _fail(f"plan failed: {_first_line(error)}")
    finally:
        session.stop()
    _say(
        f"{summary.solved} groups planned, {summary.rejected} rows rejected (see {out / 'errors'}), "
        f"{summary.wall_s:.1f} s, {summary.rows_per_s:.0f} rows/s; report {summary.report}"
    )


@pipeline_app.command()
def replay(
    traces: Annotated[str, typer.Argument(help="churn traces: JSON lines, one trace per line")],
    out: Annotated[Path, typer.Option(help="output folder")] = Path("replay-out"),
    strategy: Annotated[list[str] | None, typer.Option(help="repeat to pick; default: all five")] = None,
    master: Master = "local[*]",
    time_limit_ms: TimeLimit = 2000,
    report: Annotated[ReportFormat, typer.Option(help="report as Markdown (+ PNG) or one HTML file")] = ReportFormat.md,
) -> None:
    """Replay churn traces with every strategy; report moves, balance and time per event type."""
    _need_spark(("traces", traces))
    from pipeline.replay_core import STRATEGIES

    if unknown := [s for s in strategy or () if s not in STRATEGIES]:
        _fail(f"--strategy: unknown {', '.join(unknown)} (choose from {', '.join(STRATEGIES)})")
    from pipeline.inputs import InputError
    from pipeline.replay import ReplayOptions
    from pipeline.replay import replay as run_replay
    from pipeline.spark import spark_session

    options = ReplayOptions(traces, out, tuple(strategy or STRATEGIES), time_limit_ms, "jsonl", report.value)
    session = spark_session(None if master == "submit" else master)
    try:
        summary = run_replay(session, options, say=_say)
    except (InputError, ValueError) as error:
        _fail(str(error))
    except Exception as error:  # Spark's own failures: one line, not a Java stack trace
        _fail(f"replay failed: {_first_line(error)}")
    finally:
        session.stop()
    _say(f"{summary.traces} traces, {summary.steps} rebalances, {summary.rejected} rejected; report {summary.report}")
