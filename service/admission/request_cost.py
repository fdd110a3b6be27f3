"""What a request will cost a solver process, read from the parsed JSON before any model is built
or anything solved, and the 413 that names the field and the setting when it is over a limit.

The costs are the sizes the solvers' memory grows with (measured in bench/RESULTS.md, "Memory at
the size limits"): partitions or tasks and members or clients; a consumer group's subscriptions
(member x subscribed topic pairs: the unit classes' arcs); a Streams application's task replicas
(tasks x (1 + standbys): index entries, the flows' items and the answer's lists) and its
(subtopology, client) pairs (nodes and arcs of both Streams flows and the proof's relaxations).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

if TYPE_CHECKING:
    from stickyd.service.processes.job import Limits

Kind = Literal["consumer", "streams"]


def too_large(what: str, limit: int, setting: str) -> str:
    return f"{what} exceed this server's limit of {limit} ({setting})"


@dataclass(frozen=True)
class RequestCost:
    partitions: int
    """partitions (consumer) or tasks (Streams)."""
    members: int
    """members (consumer) or clients (Streams)."""
    subscriptions: int = 0
    """consumer: member x subscribed topic pairs."""
    task_replicas: int = 0
    """Streams: each task once, each stateful task once more per standby replica."""
    subtopology_clients: int = 0
    """Streams: subtopologies x clients."""


def _count(value: Any) -> int:
    """A non-negative integer as sent, else 0 (the model's validation names it later)."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def request_cost(kind: Kind, data: dict[str, Any]) -> RequestCost:
    """The costs, read without trusting the body's shape."""
    if kind == "consumer":
        topics = data.get("topics")
        partitions = sum(_count(v) for v in topics.values()) if isinstance(topics, dict) else 0
        members = _list(data.get("members"))
        subscriptions = sum(len(_list(m.get("topics"))) for m in members if isinstance(m, dict))
        return RequestCost(partitions, len(members), subscriptions=subscriptions)
    subtopologies = [s for s in _list(data.get("subtopologies")) if isinstance(s, dict)]
    clients = _list(data.get("clients"))
    tasks = sum(_count(s.get("partitions")) for s in subtopologies)
    stateful = sum(_count(s.get("partitions")) for s in subtopologies if s.get("stateful", True) is not False)
    config = data.get("config")
    standbys = _count(config.get("num_standby_replicas")) if isinstance(config, dict) else 0
    replicas = min(standbys, max(len(clients) - 1, 0))
    return RequestCost(
        tasks,
        len(clients),
        task_replicas=tasks + stateful * replicas,
        subtopology_clients=len(subtopologies) * len(clients),
    )


def compact_request_cost(partitions: list[int], subscriptions: list[list[int]], chosen: list[int]) -> RequestCost:
    """A compact consumer body's costs from its tables (decoded and checked already): the topics'
    partition counts, the distinct subscriptions and each member's choice among them; what
    `request_cost` reads from the same body as the contract's dict, without a step per member."""
    sizes = np.fromiter(map(len, subscriptions), dtype=np.int64, count=len(subscriptions))
    pairs = int(sizes[np.asarray(chosen, dtype=np.int64)].sum()) if chosen else 0
    return RequestCost(sum(_count(p) for p in partitions), len(chosen), subscriptions=pairs)


def over_limits(kind: Kind, cost: RequestCost, limits: Limits) -> tuple[str, str] | None:
    """(field, reason) of the first limit `cost` is over, else None."""
    units, people = ("topics", "members") if kind == "consumer" else ("subtopologies", "clients")
    noun = "partitions" if kind == "consumer" else "tasks"
    if cost.partitions > limits.max_partitions:
        return units, too_large(f"{cost.partitions} {noun}", limits.max_partitions, "STICKYD_MAX_PARTITIONS")
    if cost.members > limits.max_members:
        return people, too_large(f"{cost.members} {people}", limits.max_members, "STICKYD_MAX_MEMBERS")
    if cost.subscriptions > limits.max_subscriptions:
        said = f"{cost.subscriptions} subscriptions (member x subscribed topic pairs)"
        return "members", too_large(said, limits.max_subscriptions, "STICKYD_MAX_SUBSCRIPTIONS")
    if cost.task_replicas > limits.max_task_replicas:
        said = f"{cost.partitions} tasks with their standby replicas ({cost.task_replicas} task replicas)"
        return "subtopologies", too_large(said, limits.max_task_replicas, "STICKYD_MAX_TASK_REPLICAS")
    if cost.subtopology_clients > limits.max_subtopology_clients:
        subtopologies = cost.subtopology_clients // max(cost.members, 1)
        said = f"{subtopologies} subtopologies x {cost.members} clients ({cost.subtopology_clients} pairs)"
        return "subtopologies", too_large(said, limits.max_subtopology_clients, "STICKYD_MAX_SUBTOPOLOGY_CLIENTS")
    return None
