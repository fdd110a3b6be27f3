"""The demo's examples: the contract's problems (embedded in the package), each with what it shows."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.console import Console

from stickyd.cli.tables import print_consumer_table, print_streams_table
from stickyd.models import ConsumerProblem, ConsumerSolution, parse
from stickyd.models.streams.problem import StreamsProblem, StreamsSolution

EXAMPLES = Path(__file__).resolve().parents[1] / "service" / "examples"


@dataclass(frozen=True)
class DemoExample:
    file: str
    shows: str
    """One line: what this example demonstrates."""
    options: dict[str, Any] | None = None
    """Options laid over the example's own (the cooperative variant of a join)."""

    @property
    def kind(self) -> str:
        return "streams" if self.file.startswith("streams") else "consumer"

    def problem(self) -> dict[str, Any]:
        data: dict[str, Any] = json.loads((EXAMPLES / self.file).read_text())
        if self.options:
            data["options"] = {**data.get("options", {}), **self.options}
        return data

    @property
    def title(self) -> str:
        extra = ", ".join(f"{k} {v}" for k, v in (self.options or {}).items())
        return f"{self.file}" + (f" ({extra})" if extra else "")


DEMO_EXAMPLES = (
    DemoExample(
        "consumer-kip54-equal.json",
        "KIP-54's equal subscriptions after a member left: perfectly balanced, and only the leaver's partitions move.",
    ),
    DemoExample(
        "consumer-kip54-unequal.json",
        "KIP-54's unequal subscriptions (t0 / t0,t1 / t0..t2): the most even loads the subscriptions allow.",
    ),
    DemoExample(
        "consumer-kafka10121-join.json",
        "KAFKA-10121, a third member joins two: it gets two partitions and nothing else moves (eager protocol).",
    ),
    DemoExample(
        "consumer-kafka10121-join.json",
        "The same join with the cooperative protocol (KIP-429): revoke now, the joiner gets them after the follow-up.",
        {"protocol": "cooperative"},
    ),
    DemoExample(
        "consumer-generation-conflict.json",
        "KIP-341 claims: a zombie's older generation loses, and a partition claimed twice counts as unowned.",
    ),
    DemoExample(
        "consumer-kip315-leave.json",
        "KIP-315 co-partitioned topics: partition p of impressions and of clicks stay together when a member leaves.",
    ),
    DemoExample(
        "streams-kafka10121.json",
        "A Streams client joins (KAFKA-10121): balanced target with fewest moves; state moves through warm-ups.",
    ),
    DemoExample(
        "streams-kafka10121-greedy.json",
        "The same join with the greedy baseline, which ignores who owned what: compare its active moves.",
    ),
)


Solver = Callable[[str, dict[str, Any]], ConsumerSolution | StreamsSolution]


def run_demo(solve: Solver, heading: Callable[[DemoExample], str], console: Console) -> None:
    """Solve every example with `solve(kind, problem)` and print what it shows, then its table."""
    for example in DEMO_EXAMPLES:
        data = example.problem()
        console.print(f"\n[bold]== {heading(example)}[/bold]")
        console.print(f"   {example.shows}")
        solution = solve(example.kind, data)
        if isinstance(solution, StreamsSolution):
            print_streams_table(parse(StreamsProblem, data), solution, console)
        else:
            print_consumer_table(parse(ConsumerProblem, data), solution, console)
