"""`stickyd groups ...`: the groups a running service remembers, as tables (rich)."""

from __future__ import annotations

import datetime
from typing import TYPE_CHECKING, Annotated, Any, NoReturn

import typer
from rich.console import Console
from rich.table import Table

if TYPE_CHECKING:  # the service's client and models load when a command runs, not for `--help`
    from stickyd.client.http import StickydClient
    from stickyd.models.group_insight import Explanation
    from stickyd.models.groups import GroupState

groups_app = typer.Typer(
    help="The groups a running stickyd service remembers (/v1/groups); a token in STICKYD_TOKEN when it requires one.",
    no_args_is_help=True,
)

Url = Annotated[str, typer.Option("--url", envvar="STICKYD_URL", help="the service's base URL")]
DEFAULT_URL = "http://127.0.0.1:8000"


def _fail(message: str, code: int = 2) -> NoReturn:
    typer.echo(f"stickyd: {message}", err=True)
    raise typer.Exit(code=code)


def _client(url: str) -> StickydClient:
    from stickyd.client.http import StickydClient

    # the token comes from STICKYD_TOKEN only, so it never shows in a process listing
    return StickydClient(url, timeout=30, retries=2)


def _call(url: str, action: Any) -> Any:
    """Run `action(client)`; one line and exit 2 for a refusal, 1 when the service is unreachable."""
    import httpx

    from stickyd.client.http import StickydError

    try:
        with _client(url) as client:
            return action(client)
    except StickydError as error:
        _fail(error.detail)
    except httpx.HTTPError as error:
        _fail(f"cannot reach the service at {url} ({type(error).__name__}: {error})", code=1)


def _when(epoch: float) -> str:
    return datetime.datetime.fromtimestamp(epoch, tz=datetime.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def _owned(owned: dict[str, Any]) -> str:
    """Partitions per topic, or a Streams client's active/standby/warm-up tasks."""
    from stickyd.cli.tables import ranges

    if "active" in owned:
        roles = [("active", owned["active"])] + [(r, owned.get(r, [])) for r in ("standby", "warmup") if owned.get(r)]
        return "  ".join(f"{role}: {', '.join(tasks) or '-'}" for role, tasks in roles)
    return "  ".join(f"{topic}[{ranges(parts)}]" for topic, parts in sorted(owned.items()) if parts) or "-"


@groups_app.command("list")
def list_command(url: Url = DEFAULT_URL) -> None:
    """Every group the service remembers (for this tenant)."""
    listed = _call(url, lambda c: c.groups())
    table = Table(title=f"groups at {url}")
    for column in ("group", "kind", "generation", "members", "leaving", "held", "updated"):
        table.add_column(column, justify="right" if column in ("generation", "members", "leaving", "held") else "left")
    for g in listed.groups:
        table.add_row(
            g.group_id, g.kind, str(g.generation), str(g.members), str(g.leaving), str(g.held), _when(g.updated_at)
        )
    Console().print(table)


@groups_app.command("show")
def show_command(group: Annotated[str, typer.Argument(help="the group id")], url: Url = DEFAULT_URL) -> None:
    """A group's current generation and who owns what."""
    print_group(_call(url, lambda c: c.group(group)))


def print_group(state: GroupState) -> None:
    leaving = {m.id: m for m in state.leaving}
    table = Table(
        title=f"{state.kind} group {state.group_id}: generation {state.generation}",
        caption=f"grace {state.grace_ms} ms · {state.history} generations in history · "
        f"updated {_when(state.updated_at)}"
        + (f" · bottleneck {_bottleneck(state.stats)}" if _load(state.stats) else ""),
    )
    table.add_column("member")
    table.add_column("owns")
    table.add_column("status")
    for member in sorted(state.members):
        status = ""
        if member in leaving:
            status = "leaving, empty: safe to stop" if leaving[member].empty else "leaving, draining"
        table.add_row(member, _owned(state.assignment.get(member, {})), status)
    for held in state.held:
        table.add_row(held.id, _owned(held.assignment), f"lost, held until {_when(held.until)}")
    Console().print(table)


def _load(stats: Any) -> dict[str, Any] | None:
    """Balance `load`: the answer's `stats.load`, else None."""
    load = stats.get("load") if isinstance(stats, dict) else None
    return load if isinstance(load, dict) else None


def _bottleneck(stats: Any) -> str:
    """`470 (best >= 450)`: the largest weight per capacity, and the proven bound on the best."""
    load = _load(stats)
    if load is None:
        return ""
    bound = load.get("lower_bound")
    return f"{load['max']:g}" + (f" (best >= {bound:g})" if bound is not None else "")


@groups_app.command("history")
def history_command(
    group: Annotated[str, typer.Argument(help="the group id")],
    limit: Annotated[int, typer.Option(min=1, help="newest generations to show")] = 20,
    url: Url = DEFAULT_URL,
) -> None:
    """The group's retained generations, newest first."""
    history = _call(url, lambda c: c.group_history(group, limit))
    table = Table(title=f"history of {group}")
    weighed = any(_load(e.record.get("solution", {}).get("stats")) for e in history.generations)
    columns = ("generation", "at", "members", "moves", "solver", "newcomers", "departed", "held")
    for column in (*columns, "bottleneck") if weighed else columns:
        table.add_column(column, justify="right" if column in ("generation", "members", "moves") else "left")
    for entry in history.generations:
        record = entry.record
        load = [_bottleneck(record.get("solution", {}).get("stats"))] if weighed else []
        table.add_row(
            str(entry.generation),
            _when(entry.created_at),
            str(entry.members),
            str(entry.moves),
            entry.solver,
            ", ".join(record.get("newcomers", [])),
            ", ".join(record.get("departed", [])),
            ", ".join(h["id"] for h in record.get("held", [])),
            *load,
        )
    Console().print(table)


@groups_app.command("explain")
def explain_command(
    group: Annotated[str, typer.Argument(help="the group id")],
    topic: Annotated[str, typer.Argument(help="the topic (a Streams application: the subtopology id)")],
    partition: Annotated[int, typer.Argument(min=0, help="the partition (Streams: the task's partition)")],
    url: Url = DEFAULT_URL,
) -> None:
    """Why a partition (or Streams task) is where it is: its owners over the retained generations."""
    print_explanation(_call(url, lambda c: c.explain(group, topic, partition)))


def print_explanation(explained: Explanation) -> None:
    table = Table(title=f"{explained.item} in {explained.kind} group {explained.group_id}", caption=explained.rack)
    for column in ("generation", "at", "owner", "why"):
        table.add_column(column, justify="right" if column == "generation" else "left")
    for step in explained.steps:
        table.add_row(str(step.generation), _when(step.created_at), step.owner or "-", step.words)
    console = Console()
    console.print(table)
    console.print(explained.summary)


@groups_app.command("leave")
def leave_command(
    group: Annotated[str, typer.Argument(help="the group id")],
    members: Annotated[list[str], typer.Argument(help="members to drain (planned departure)")],
    url: Url = DEFAULT_URL,
) -> None:
    """Mark members as leaving: from the next rebalance on they get nothing new and are drained."""
    print_group(_call(url, lambda c: c.mark_leaving(group, members)))


@groups_app.command("forget")
def forget_command(
    group: Annotated[str, typer.Argument(help="the group id")],
    yes: Annotated[bool, typer.Option("--yes", help="do not ask")] = False,
    url: Url = DEFAULT_URL,
) -> None:
    """Forget a group's state and history (its generation numbers are not reused)."""
    if not yes and not typer.confirm(f"forget group {group} and its history?"):
        raise typer.Exit(code=1)
    _call(url, lambda c: c.forget_group(group))
    typer.echo(f"forgot group {group}")
