"""`stickyd`: solve from the command line, or serve the HTTP API."""

from __future__ import annotations

import gc
import json
import logging
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NoReturn

import typer
from rich.console import Console

from stickyd.cli.groups import groups_app
from stickyd.cli.pipeline import pipeline_app
from stickyd.cli.snapshot import snapshot
from stickyd.cli.tokens import tokens_app

if TYPE_CHECKING:
    from stickyd.cli.demo import DemoExample
    from stickyd.models import ConsumerSolution
    from stickyd.models.streams.problem import StreamsSolution

app = typer.Typer(help="stickyd: provably balanced, minimally moving Kafka assignments.", no_args_is_help=True)
solve_app = typer.Typer(help="Solve one problem in the contract's JSON format.", no_args_is_help=True)
app.add_typer(solve_app, name="solve")
app.add_typer(pipeline_app, name="pipeline")
app.add_typer(groups_app, name="groups")
app.add_typer(tokens_app, name="tokens")
app.command()(snapshot)


def _read(file: str) -> Any:
    text = sys.stdin.read() if file == "-" else _read_file(file)
    source = "standard input" if file == "-" else file
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        _fail(f"{source}: not valid JSON ({error.msg} at line {error.lineno} column {error.colno})")


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
    """Assign a consumer group's partitions (docs/wire-format.md, consumer assignment)."""
    from stickyd.cli.tables import print_consumer_table
    from stickyd.models import ConsumerProblem, ProblemError, parse
    from stickyd.solvers import solve_consumer

    try:
        problem = parse(ConsumerProblem, _read(file))
        solution = solve_consumer(problem)
    except ProblemError as error:
        _fail(str(error))
    if table:
        print_consumer_table(problem, solution)
    else:
        typer.echo(solution.model_dump_json())


@solve_app.command("streams")
def solve_streams_command(
    file: Annotated[str, typer.Argument(help="problem JSON file, or - for stdin")],
    table: Annotated[bool, typer.Option(help="print a table instead of the JSON response")] = False,
) -> None:
    """Assign a Kafka Streams application's tasks (docs/wire-format.md, Streams assignment)."""
    from stickyd.cli.tables import print_streams_table
    from stickyd.models import ProblemError, parse
    from stickyd.models.streams.problem import StreamsProblem
    from stickyd.solvers import solve_streams

    try:
        streams_problem = parse(StreamsProblem, _read(file))
        solution = solve_streams(streams_problem)
    except ProblemError as error:
        _fail(str(error))
    if table:
        print_streams_table(streams_problem, solution)
    else:
        typer.echo(solution.model_dump_json())


@app.command()
def serve(
    host: Annotated[
        str | None, typer.Option(help="address to listen on", envvar="STICKYD_HOST", show_default="127.0.0.1")
    ] = None,
    port: Annotated[int | None, typer.Option(help="port", envvar="STICKYD_PORT", show_default="8000")] = None,
    workers: Annotated[
        int | None,
        typer.Option(help="solver processes", envvar="STICKYD_WORKERS", show_default="the machine's cores"),
    ] = None,
) -> None:
    """Serve the v1 HTTP API. Every other setting comes from its STICKYD_* environment variable
    (README, "The HTTP service"): time limits, request bounds, the group store, shutdown grace."""
    from stickyd.service.processes.fork_server import ForkServer
    from stickyd.service.settings import Settings

    overrides: dict[str, Any] = {"host": host, "port": port, "workers": workers}
    try:
        # keyword arguments override the STICKYD_* environment (model_validate would skip it)
        settings = Settings(**{k: v for k, v in overrides.items() if v is not None})
    except ValueError as problem:
        _fail(f"settings: {problem}".splitlines()[0])
    forks = ForkServer()
    forks.spawn()  # it imports the solvers while this process imports the web app
    import uvicorn

    from stickyd.service.http.app import create_app
    from stickyd.service.http.header_timeout import header_timeout_protocol

    logging.basicConfig(level=settings.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s %(message)s")
    _lean_log_records()
    served = create_app(settings, forks)
    # the imported libraries stay for the process's life: the cyclic collector stops rescanning
    # them (a full collection of them would stall every request in flight for tens of ms)
    gc.freeze()
    uvicorn.run(
        served,
        host=settings.host,
        port=settings.port,
        log_level=settings.log_level,
        access_log=False,
        http=header_timeout_protocol(settings.header_timeout_s),
        timeout_graceful_shutdown=settings.shutdown_grace_s,  # type: ignore[arg-type]  # a float works
    )


def _lean_log_records() -> None:
    """Log records without what the format never prints (the caller's file and line, found by
    walking the stack, and thread and process names): the logging HOWTO's "Optimization" knobs.
    One access line per request is a fifth cheaper."""
    logging._srcfile = None  # noqa: SLF001 - the documented switch for caller lookups
    logging.logThreads = False
    logging.logProcesses = False
    logging.logMultiprocessing = False


@app.command()
def demo(
    in_process: Annotated[bool, typer.Option(help="solve in this process instead of via the service")] = False,
) -> None:
    """Start `stickyd serve` on a free loopback port, send it the contract's example problems
    (embedded in the package) with the Python client, and print each answer as a before -> after
    table under one line saying what the example shows; stop the service."""
    from stickyd.cli.demo import run_demo
    from stickyd.solvers import solve_consumer, solve_streams

    console = Console()
    if in_process:
        run_demo(lambda kind, p: solve_streams(p) if kind == "streams" else solve_consumer(p), _title, console)
        return
    from stickyd.cli.child_service import running_service
    from stickyd.client.http import StickydClient

    with running_service() as service, StickydClient(service.url) as client:
        url = service.url
        console.print(f"stickyd serve is answering on {url}")

        def ask(kind: str, problem: dict[str, Any]) -> ConsumerSolution | StreamsSolution:
            return client.assign_streams(problem) if kind == "streams" else client.assign_consumer(problem)

        run_demo(ask, lambda example: f"POST {url}/v1/assign/{example.kind}  ({example.title})", console)


def _title(example: DemoExample) -> str:
    return example.title


def main() -> None:
    app(prog_name="stickyd")
