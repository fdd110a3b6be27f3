"""`stickyd pipeline ...`: the PySpark jobs from the command line (needs the `pipeline` extra)."""

from __future__ import annotations

import importlib.util
import time
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any, NoReturn

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

from stickyd.solvers.time_policy import DEFAULT_TIME_LIMIT_MS

pipeline_app = typer.Typer(
    help="Fleet-wide planning and churn replay on Spark (local mode or spark-submit).", no_args_is_help=True
)
console = Console(stderr=True, soft_wrap=True)


class InputFormat(StrEnum):
    auto = "auto"
    jsonl = "jsonl"
    parquet = "parquet"


class BalanceMode(StrEnum):
    by_count = "count"
    per_topic = "per_topic"
    load = "load"


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


def _need_spark() -> None:
    """Refuse before a JVM starts: pyspark missing."""
    if importlib.util.find_spec("pyspark") is None:
        _fail("the pipeline needs pyspark: pip install 'stickyd[pipeline]' (and Java 17)")


class SparkLogLevel(StrEnum):
    OFF = "OFF"
    FATAL = "FATAL"
    ERROR = "ERROR"
    WARN = "WARN"
    INFO = "INFO"
    DEBUG = "DEBUG"


Master = Annotated[str, typer.Option(help="Spark master; 'submit' keeps what spark-submit set")]
TimeLimit = Annotated[int, typer.Option(min=1, help="per group, where its problem sets none")]
LogLevel = Annotated[SparkLogLevel, typer.Option(help="level of Spark's own log", case_sensitive=False)]
LogFile = Annotated[
    str | None,
    typer.Option(
        help="where the JVM's output goes (Spark's log and warnings); '-' for the terminal",
        show_default="OUT/spark.log",
    ),
]


def _start_spark(master: str, level: SparkLogLevel, log: str | None, out: Path) -> Any:
    """Java there, then the session (the JVM's output to `log`, by default OUT/spark.log)."""
    from stickyd.pipeline.preflight import InputError, check_java
    from stickyd.pipeline.spark import spark_session

    try:
        check_java()
    except InputError as error:
        _fail(str(error))
    log_file = None if log == "-" else Path(log) if log else out / "spark.log"
    with console.status("starting Spark"):
        try:
            session = spark_session(None if master == "submit" else master, log_level=level.value, log_file=log_file)
        except Exception as error:  # no JVM, a bad master URL
            where = f" (see {log_file})" if log_file else ""
            _fail(f"Spark did not start: {_first_line(error)}{where}")
    _say(f"Spark {session.version} on {session.sparkContext.master}" + (f", its log in {log_file}" if log_file else ""))
    return session


class _TaskBar:
    """Spark's task counts as a rich progress bar below stickyd's own lines on a terminal; in a log
    file or pipe, one line at most every `QUIET_S` seconds (Spark's own bar is off)."""

    QUIET_S = 10.0

    def __init__(self) -> None:
        self.bar = Progress(
            TextColumn("[dim]spark tasks[/dim]"), BarColumn(), MofNCompleteColumn(), console=console, transient=True
        )
        self.task = self.bar.add_task("tasks", total=None)
        self.said_at = time.monotonic()

    def __call__(self, done: int, total: int) -> None:
        if console.is_terminal:
            self.bar.update(self.task, completed=done, total=total)
        elif time.monotonic() - self.said_at >= self.QUIET_S:
            self.said_at = time.monotonic()
            _say(f"  spark tasks {done}/{total}")

    def __enter__(self) -> _TaskBar:
        if console.is_terminal:
            self.bar.start()
        return self

    def __exit__(self, *_: object) -> None:
        if console.is_terminal:  # stopping a bar never started prints an empty line
            self.bar.stop()


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
    from stickyd.pipeline.generate import FleetShape, fleet_rows, metrics_rows, trace_rows, write_jsonl, write_parquet

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
    time_limit_ms: TimeLimit = DEFAULT_TIME_LIMIT_MS,
    input_format: Annotated[InputFormat, typer.Option("--format", help="the snapshot's format")] = InputFormat.auto,
    report: Annotated[ReportFormat, typer.Option(help="report as Markdown (+ PNG) or one HTML file")] = ReportFormat.md,
    concurrency: Annotated[int, typer.Option(min=1, help="--service: requests in flight")] = 4,
    batch_size: Annotated[int, typer.Option(min=1, help="--service: rows per batch")] = 64,
    balance: Annotated[
        BalanceMode | None, typer.Option(help="set options.balance of every consumer group", show_default=False)
    ] = None,
    weights: Annotated[
        str | None,
        typer.Option(help="--balance load: rate (--metrics bytes/s), lag (the snapshot's lag) or a JSON file"),
    ] = None,
    lag: Annotated[str | None, typer.Option(help="--weights lag: lag rows", show_default="lag.jsonl beside it")] = None,
    spark_log_level: LogLevel = SparkLogLevel.ERROR,
    spark_log: LogFile = None,
) -> None:
    """Solve every group of a fleet snapshot; write assignments, stats, errors and a report."""
    _need_spark()
    from stickyd.pipeline.load_plan import check_load_options, default_lag
    from stickyd.pipeline.preflight import InputError, check_plan_inputs

    lag = lag or (default_lag(snapshot) if weights == "lag" else None)
    try:  # before Spark starts: a wrong input is refused in about a second
        check_plan_inputs(snapshot, input_format.value, metrics, service)
        check_load_options(balance.value if balance else None, weights, metrics is not None, lag)
    except InputError as error:
        _fail(str(error))
    session = _start_spark(master, spark_log_level, spark_log, out)
    from stickyd.pipeline.plan import PlanOptions
    from stickyd.pipeline.plan import plan as run_plan

    options = PlanOptions(
        snapshot, out, metrics, service, time_limit_ms, input_format.value, report.value, concurrency, batch_size,
        balance=balance.value if balance else None, weights=weights, lag=lag,
    )  # fmt: skip
    try:
        with _TaskBar() as bar:
            summary = run_plan(session, options, say=_say, progress=bar)
    except (InputError, ValueError) as error:
        _fail(str(error))
    except Exception as error:  # Spark's own failures (unreadable Parquet, a lost executor): one line
        _fail(f"plan failed: {_first_line(error)}")
    finally:
        session.stop()
    _say(
        f"{summary.solved} groups planned, {summary.rejected} rows rejected (see {out / 'errors'}), "
        f"{summary.wall_s:.1f} s, {summary.rows_per_s:.1f} rows/s; report {summary.report}"
    )
    _rejected(summary.first_rejected, summary.rejected)


@pipeline_app.command()
def replay(
    traces: Annotated[str, typer.Argument(help="churn traces: JSON lines, one trace per line")],
    out: Annotated[Path, typer.Option(help="output folder")] = Path("replay-out"),
    strategy: Annotated[list[str] | None, typer.Option(help="repeat to pick; default: all five")] = None,
    master: Master = "local[*]",
    time_limit_ms: TimeLimit = DEFAULT_TIME_LIMIT_MS,
    report: Annotated[ReportFormat, typer.Option(help="report as Markdown (+ PNG) or one HTML file")] = ReportFormat.md,
    spark_log_level: LogLevel = SparkLogLevel.ERROR,
    spark_log: LogFile = None,
) -> None:
    """Replay churn traces with every strategy; report moves, balance and time per event type."""
    _need_spark()
    from stickyd.pipeline.churn.replay_core import STRATEGIES
    from stickyd.pipeline.preflight import TRACE_COLUMNS, InputError, check_rows_input

    if unknown := [s for s in strategy or () if s not in STRATEGIES]:
        _fail(f"--strategy: unknown {', '.join(unknown)} (choose from {', '.join(STRATEGIES)})")
    try:
        check_rows_input(traces, "jsonl", "traces", TRACE_COLUMNS)
    except InputError as error:
        _fail(str(error))
    session = _start_spark(master, spark_log_level, spark_log, out)
    from stickyd.pipeline.churn.replay import ReplayOptions
    from stickyd.pipeline.churn.replay import replay as run_replay

    options = ReplayOptions(traces, out, tuple(strategy or STRATEGIES), time_limit_ms, "jsonl", report.value)
    try:
        with _TaskBar() as bar:
            summary = run_replay(session, options, say=_say, progress=bar)
    except (InputError, ValueError) as error:
        _fail(str(error))
    except Exception as error:  # Spark's own failures: one line, not a Java stack trace
        _fail(f"replay failed: {_first_line(error)}")
    finally:
        session.stop()
    _say(f"{summary.traces} traces, {summary.steps} rebalances, {summary.rejected} rejected; report {summary.report}")
    _rejected(summary.first_rejected, summary.rejected)


def _rejected(first: tuple[str, ...], count: int) -> None:
    for line in first:
        _say(f"  rejected {line}")
    if count > len(first):
        _say(f"  ... and {count - len(first)} more in errors/")
