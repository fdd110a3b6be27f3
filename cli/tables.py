"""Answers as tables: per member what it owned before, what it gets, and what changes hands.

A consumer member's row shows its claims (`before`), its final partitions (`after`: the target in
the cooperative protocol), and the difference as kept / gained / lost. A cooperative answer adds
what the member must revoke now and what it runs until the follow-up rebalance; the footer says
that loads and moves are measured on the target.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from rich.console import Console
from rich.table import Table

from stickyd.models import ConsumerProblem, ConsumerSolution
from stickyd.models.streams.problem import StreamsProblem, StreamsSolution

Partitions = Mapping[str, Sequence[int]]


def ranges(parts: Sequence[int]) -> str:
    """[0, 1, 2, 5] -> '0-2,5'."""
    out: list[tuple[int, int]] = []
    for p in sorted(parts):
        if out and out[-1][1] == p - 1:
            out[-1] = (out[-1][0], p)
        else:
            out.append((p, p))
    return ",".join(str(a) if a == b else f"{a}-{b}" for a, b in out)


def partition_text(parts: Partitions) -> str:
    shown = [f"{topic}: {ranges(p)}" for topic, p in sorted(parts.items()) if p]
    return "  ".join(shown) or "-"


def _pairs(parts: Partitions) -> set[tuple[str, int]]:
    return {(topic, p) for topic, ps in parts.items() for p in ps}


def _grouped(pairs: set[tuple[str, int]]) -> dict[str, list[int]]:
    out: dict[str, list[int]] = {}
    for topic, p in sorted(pairs):
        out.setdefault(topic, []).append(p)
    return out


def member_changes(before: Partitions, after: Partitions) -> tuple[dict[str, list[int]], ...]:
    """(kept, gained, lost) between a member's claims and its final partitions."""
    old, new = _pairs(before), _pairs(after)
    return _grouped(old & new), _grouped(new - old), _grouped(old - new)


def print_consumer_table(problem: ConsumerProblem, solution: ConsumerSolution, console: Console | None = None) -> None:
    console = console or Console()
    cooperative = solution.target is not None
    final = solution.target if solution.target is not None else solution.assignment
    title = "consumer group assignment: before -> after" + (" (cooperative: target after the follow-up)" * cooperative)
    view = Table(title=title)
    for column in ("member", "before (owned)", "after", "n", "kept", "gained", "lost"):
        view.add_column(column, justify="right" if column == "n" else "left")
    if cooperative:
        view.add_column("revoke now")
        view.add_column("runs until follow-up")
    for member in problem.members:
        after = final.get(member.id, {})
        kept, gained, lost = member_changes(member.owned, after)
        row = [
            member.id,
            partition_text(member.owned),
            partition_text(after),
            str(sum(len(p) for p in after.values())),
            partition_text(kept),
            partition_text(gained),
            partition_text(lost),
        ]
        if cooperative:
            row += [partition_text(solution.revoke.get(member.id, {})), partition_text(solution.assignment[member.id])]
        view.add_row(*row)
    console.print(view)
    s = solution.stats
    measured = " (on the target)" if cooperative else ""
    console.print(
        f"strategy {s.strategy} · solver {s.solver} · optimal {s.optimal} · fallback {s.fallback} · "
        f"moves {s.moves} of {s.owned} owned{measured} · load {s.min_load}..{s.max_load}{measured} · "
        f"{s.time_ms:.1f} ms"
    )
    if s.load is not None:
        bound = "" if s.load.lower_bound is None else f" · best possible >= {s.load.lower_bound:g}"
        moves = "" if s.load.moves_lower_bound is None else f" · moves >= {s.load.moves_lower_bound}"
        console.print(f"normalized load (weight / capacity) {s.load.min:g}..{s.load.max:g}{bound}{moves}")
    if solution.unassigned:
        console.print(f"unassigned (co-partitioning remainder): {partition_text(solution.unassigned)}")
    for warning in s.warnings:
        console.print(f"[yellow]warning:[/yellow] {warning}")


def _tasks(tasks: Sequence[str]) -> str:
    return " ".join(tasks) or "-"


def print_streams_table(problem: StreamsProblem, solution: StreamsSolution, console: Console | None = None) -> None:
    console = console or Console()
    view = Table(title="streams task assignment: before -> target, and what runs now")
    for column in (
        "client",
        "before active",
        "target active",
        "gained",
        "lost",
        "target standby",
        "runs now",
        "warm-up",
    ):
        view.add_column(column)
    for client in problem.clients:
        target = solution.target[client.id]
        now = solution.assignment[client.id]
        before, after = set(client.active), set(target.active)
        view.add_row(
            client.id,
            _tasks(client.active),
            _tasks(target.active),
            _tasks(sorted(after - before)),
            _tasks(sorted(before - after)),
            _tasks(target.standby),
            _tasks(now.active),
            _tasks(now.warmup),
        )
    console.print(view)
    s = solution.stats
    costs = (
        f"restore cost moved {s.active_move_cost:,} active · {s.standby_move_cost:,} standby · "
        if s.active_move_cost is not None and s.standby_move_cost is not None
        else ""
    )
    console.print(
        f"strategy {s.strategy} · solver {s.solver} · optimal {s.optimal} · fallback {s.fallback} · "
        f"active moves {s.active_moves} · standby moves {s.standby_moves} · {costs}warm-ups {s.warmups} · "
        f"follow-up rebalance {solution.followup_rebalance} · {s.time_ms:.1f} ms"
    )
    for warning in s.warnings:
        console.print(f"[yellow]warning:[/yellow] {warning}")
