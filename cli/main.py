"""`stickyd`: solve from the command line, or serve the HTTP API."""

from __future__ import annotations

import json
import logging
import sys
from pathlib import Path
from typing import Annotated, Any, NoReturn

import typer
from rich.console import Console
from rich.table import Table

from cli.pipeline import pipeline_app
from models import ConsumerSolution, ProblemError
from models.streams import StreamsSolution
from solvers import solve_consumer, solve_streams

app = typer.Typer(help="stickyd: provably balanced, minimally moving Kafka assignments.", no_args_is_help=True)
solve_app = typer.Typer(help="Solve one problem in the contract's JSON format.", no_args_is_help=True)
app.add_typer(solve_app, name="solve")
app.add_typer(pipeline_app, name="pipeline")

EXAMPLES = Path(__file__).resolve().parents[1] / "service" / "examples"


def _read(file: str) -> Any:
    text = sys.stdin.read() if file == "-" else _read_file(file)
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        _fail(f"body: not valid JSON ({error.msg} at line {error.lineno} column {error.colno})")


def _read_file(file: str) -> str:
    try:
        return Path(file).read_text()
    except OSError as error:
        _fail(f"{file}: cannot read ({error.strerror})")


def _fail(message: str) -> NoReturn:
    typer.echo(f"stickyd: {message}", err=True)
    raise typer.Exit(code=2)


@solve_app.command("consumer")
def solve_consumer_command(
    file: Annotated[str, typer.Argument(help="problem JSON file, or - for stdin")],
    table: Annotated[bool, typer.Option(help="print a table instead of the JSON response")] = False,
) -> None:
    """Assign a consumer group's partitions (contract section 1)."""
    try:
        solution = solve_consumer(_read(file))
    except ProblemError as error:
        _fail(str(error))
    if table:
        print_consumer_table(solution)
    else:
        typer.echo(solution.model_dump_json())


@solve_app.command("streams")
def solve_streams_command(
    file: Annotated[str, typer.Argument(help="problem JSON file, or - for stdin")],
    table: Annotated[bool, typer.Option(help="print a table instead of the JSON response")] = False,
) -> None:
    """Assign a Kafka Streams application's tasks (contract section 2)."""
    try:
        solution = solve_streams(_read(file))
    except ProblemError as error:
        _fail(str(error))
    if table:
        print_streams_table(solution)
    else:
        typer.echo(solution.model_dump_json())


def print_streams_table(solution: StreamsSolution) -> None:
    console = Console()
    view = Table(title="streams task assignment (target, and what runs now)")
    for column in ("client", "target active", "target standby", "running active", "warm-up"):
        view.add_column(column)
    for client, target in solution.target.items():
        now = solution.assignment[client]
        view.add_row(
            client,
            " ".join(target.active) or "-",
            " ".join(target.standby) or "-",
            " ".join(now.active) or "-",
            " ".join(now.warmup) or "-",
        )
    console.print(view)
    s = solution.stats
    console.print(
        f"strategy {s.strategy} · solver {s.solver} · optimal {s.optimal} · fallback {s.fallback} · "
        f"active moves {s.active_moves} · standby moves {s.standby_moves} · warm-ups {s.warmups} · "
        f"follow-up rebalance {solution.followup_rebalance} · {s.time_ms:.1f} ms"
    )
    for warning in s.warnings:
        console.print(f"[yellow]warning:[/yellow] {warning}")


def print_consumer_table(solution: ConsumerSolution) -> None:
    console = Console()
    view = Table(title="consumer group assignment")
    view.add_column("member")
    view.add_column("partitions", justify="right")
    view.add_column("assignment")
    for member, parts in solution.assignment.items():
        text = "  ".join(f"{t}: {_ranges(p)}" for t, p in parts.items()) or "-"
        view.add_row(member, str(sum(len(p) for p in parts.values())), text)
    console.print(view)
    s = solution.stats
    console.print(
        f"strategy {s.strategy} · solver {s.solver} · optimal {s.optimal} · fallback {s.fallback} · "
        f"moves {s.moves} of {s.owned} owned · load {s.min_load}..{s.max_load} · {s.time_ms:.1f} ms"
    )
    for warning in s.warnings:
        console.print(f"[yellow]warning:[/yellow] {warning}")


def _ranges(parts: list[int]) -> str:
    """[0, 1, 2, 5] -> '0-2,5'."""
    out: list[str] = []
    for p in parts:
        if out and out[-1].split("-")[-1] == str(p - 1):
            out[-1] = f"{out[-1].split('-')[0]}-{p}"
        else:
            out.append(str(p))
    return ",".join(out)


@app.command()
def serve(
    host: Annotated[str | None, typer.Option(help="address to listen on [env STICKYD_HOST; 127.0.0.1]")] = None,
    port: Annotated[int | None, typer.Option(help="port [env STICKYD_PORT; 8000]")] = None,
    workers: Annotated[int | None, typer.Option(help="solver processes [env STICKYD_WORKERS; cores]")] = None,
) -> None:
    """Serve the v1 HTTP API (settings from STICKYD_* environment variables)."""
    import uvicorn

    from service.app import create_app
    from service.settings import Settings

    overrides: dict[str, Any] = {"host": host, "port": port, "workers": workers}
    try:
        # keyword arguments override the STICKYD_* environment (model_validate would skip it)
        settings = Settings(**{k: v for k, v in overrides.items() if v is not None})
    except ValueError as problem:
        _fail(f"settings: {problem}".splitlines()[0])
    logging.basicConfig(level=settings.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s %(message)s")
    uvicorn.run(
        create_app(settings),
        host=settings.host,
        port=settings.port,
        log_level=settings.log_level,
        access_log=False,
        timeout_graceful_shutdown=settings.shutdown_grace_s,  # type: ignore[arg-type]  # a float works
    )


@app.command()
def demo(
    in_process: Annotated[bool, typer.Option(help="solve in this process instead of via the service")] = False,
) -> None:
    """Start `stickyd serve` on a free loopback port, send it the contract's example problems
    (embedded in the package) with the Python client, print each answer as a table, stop it."""
    problems = [(p.name, json.loads(p.read_text())) for p in sorted(EXAMPLES.glob("*.json"))]
    if in_process:
        for name, problem in problems:
            typer.echo(f"\n== {name}")
            if name.startswith("streams"):
                print_streams_table(solve_streams(problem))
            else:
                print_consumer_table(solve_consumer(problem))
        return
    from cli.child_service import running_service
    from client.http import StickydClient

    with running_service() as service, StickydClient(service.url) as client:
        url = service.url
        typer.echo(f"stickyd serve is answering on {url}")
        for name, problem in problems:
            kind = "streams" if name.startswith("streams") else "consumer"
            typer.echo(f"\n== POST {url}/v1/assign/{kind}  ({name})")
            if kind == "streams":
                print_streams_table(client.assign_streams(problem))
            else:
                print_consumer_table(client.assign_consumer(problem))


def main() -> None:
    app()
