"""Spark Structured Streaming: explicit, sticky Kafka partitions for drivers that share topics.

Spark's Kafka source places partitions on executors by hashing, and when several Spark
applications split a set of topics between them (one logical consumer group), each needs its own
`assign` option. `kafka_assign` gives a driver its share: every driver of the group asks stickyd
(over HTTP, or in-process if the service does not answer in time) with the same members, topics
and the group's last assignment, so all drivers compute the same split, a restart gets back what
it had, and a driver joining or leaving moves as few partitions as possible.

    from pipeline.kafka_assign import kafka_assign

    share = kafka_assign(
        group="clickstream", driver="driver-1", drivers=["driver-0", "driver-1", "driver-2"],
        topics={"clicks": 12, "views": 6}, state_dir="/checkpoints/stickyd",
        service_url="http://stickyd:8000",
    )
    stream = (spark.readStream.format("kafka")
              .option("kafka.bootstrap.servers", "broker:9092")
              .option("assign", share.option)
              .load())

The group's last assignment lives in `state_dir/<group>.json` (a directory every driver can
read, e.g. next to the streaming checkpoints); until the service keeps group state itself, this
file is what makes the split sticky when the set of drivers changes.
"""

from __future__ import annotations

import json
import logging
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from client.fallback import assign_consumer_or_solve
from models import ConsumerSolution
from solvers import solve_consumer

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class DriverShare:
    """This driver's partitions, the `assign` option value, and how the answer was reached."""

    partitions: dict[str, list[int]]
    option: str
    solver: str
    fallback: bool
    moves: int
    generation: int


def kafka_assign(
    group: str,
    driver: str,
    drivers: list[str],
    topics: dict[str, int],
    state_dir: str | Path,
    service_url: str | None = None,
    timeout_s: float = 2.0,
    time_limit_ms: int = 500,
) -> DriverShare:
    """Split `topics` across `drivers` with stickyd and return `driver`'s share.

    Raises ValueError for a driver that is not among `drivers` or an empty topic list.
    """
    if driver not in drivers:
        raise ValueError(f"driver: {driver!r} is not in drivers {sorted(drivers)}")
    if not topics:
        raise ValueError("topics: give at least one topic with its partition count")
    state_path = Path(state_dir) / f"{group}.json"
    state = _read_state(state_path)
    generation = int(state.get("generation", 0))
    last: dict[str, dict[str, list[int]]] = state.get("assignment", {})
    members = []
    for member in sorted(set(drivers)):
        entry: dict[str, Any] = {"id": member, "topics": sorted(topics)}
        if member in last:
            entry |= {"owned": last[member], "generation": generation}
        members.append(entry)
    problem = {"topics": topics, "members": members, "options": {"time_limit_ms": time_limit_ms}}
    solution = _solve(problem, service_url, timeout_s)
    _write_state(state_path, {"generation": generation + 1, "assignment": solution.assignment})
    mine = {t: parts for t, parts in sorted(solution.assignment[driver].items()) if parts}
    return DriverShare(
        partitions=mine,
        option=json.dumps(mine, separators=(",", ":")),
        solver=solution.stats.solver,
        fallback=solution.stats.fallback,
        moves=solution.stats.moves,
        generation=generation + 1,
    )


def _solve(problem: dict[str, Any], service_url: str | None, timeout_s: float) -> ConsumerSolution:
    if service_url is None:
        return solve_consumer(problem)
    solution, error = assign_consumer_or_solve(service_url, problem, timeout_s)
    if error is not None:  # the driver starts anyway, with the in-process answer
        log.warning("stickyd at %s did not answer (%s); solved in-process", service_url, error)
    return solution


def _read_state(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as error:
        log.warning("ignoring unreadable group state %s (%s)", path, error)
        return {}
    return data if isinstance(data, dict) else {}


def _write_state(path: Path, state: dict[str, Any]) -> None:
    """Atomically: a driver reading at the same time sees the old or the new file, never half."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    with os.fdopen(fd, "w") as out:
        json.dump(state, out)
    os.replace(tmp, path)
