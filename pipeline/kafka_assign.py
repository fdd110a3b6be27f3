"""Spark Structured Streaming: explicit, sticky Kafka partitions for drivers that share topics.

Spark's Kafka source places partitions on executors by hashing, and when several Spark
applications split a set of topics between them (one logical consumer group), each needs its own
`assign` option. `kafka_assign` gives a driver its share from the group that stickyd keeps
(`/v1/groups/{group}`): the service remembers the group's last split and generation, so drivers
need no shared folder, all of them get the same split, a restart gets back what it had, and a
driver joining or leaving moves as few partitions as possible.

    from stickyd.pipeline.kafka_assign import kafka_assign

    share = kafka_assign(
        group="clickstream", driver="driver-1", drivers=["driver-0", "driver-1", "driver-2"],
        topics={"clicks": 12, "views": 6}, service_url="http://stickyd:8000",
    )
    stream = (spark.readStream.format("kafka")
              .option("kafka.bootstrap.servers", "broker:9092")
              .option("assign", share.option)
              .load())

How a driver gets its share: it reads the group; when the stored split is for exactly these
drivers and topics it takes it as it is (no new generation: drivers starting together, or a
restarted driver, all land on one generation); otherwise it rebalances the group with the
generation it read, and after a 409 (another driver got there first) it reads again. If the
service does not answer, the driver solves in-process from its own copy of the last answer it
got (kept in memory, and in `local_dir` if given: a folder of this driver's own, not shared).
"""

from __future__ import annotations

import json
import logging
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import httpx

from stickyd.client.http import GenerationConflict, StickydClient, StickydError
from stickyd.models import ConsumerSolution
from stickyd.solvers import solve_consumer

log = logging.getLogger(__name__)

ROUNDS = 10
"""reads and rebalances a driver tries before it gives up on the service (then in-process)."""
Source = Literal["stored", "rebalance", "in-process"]


@dataclass(frozen=True)
class DriverShare:
    """This driver's partitions, the `assign` option value, and how the answer was reached."""

    partitions: dict[str, list[int]]
    option: str
    solver: str
    fallback: bool
    """true when the service did not answer and the driver solved in-process."""
    moves: int
    generation: int
    """the group's generation this split belongs to (in-process: the last one the service gave)."""
    source: Source
    """`stored`: the group's current split, taken as is; `rebalance`: a new generation made for
    this call; `in-process`: solved here from the local copy."""


@dataclass(frozen=True)
class _Split:
    assignment: dict[str, dict[str, list[int]]]
    generation: int
    solver: str
    moves: int


_last: dict[str, _Split] = {}
"""the in-process copy of each group's last answer."""


def kafka_assign(
    group: str,
    driver: str,
    drivers: list[str],
    topics: dict[str, int],
    service_url: str | None = None,
    *,
    local_dir: str | Path | None = None,
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
    members = sorted(set(drivers))
    problem = {
        "topics": topics,
        "members": [{"id": m, "topics": sorted(topics)} for m in members],
        "options": {"time_limit_ms": time_limit_ms},
    }
    found: tuple[_Split, Source] | None = None
    source: Source
    if service_url is not None:
        try:
            found = _from_service(service_url, group, members, topics, problem, timeout_s)
        except (StickydError, httpx.HTTPError, OSError, ValueError) as error:
            log.warning("stickyd at %s did not answer for group %s (%s); solving in-process", service_url, group, error)
    if found is None:
        split, source = _in_process(group, problem, local_dir), "in-process"
    else:
        split, source = found
        _remember(group, split, local_dir)
    mine = {t: parts for t, parts in sorted(split.assignment.get(driver, {}).items()) if parts}
    return DriverShare(
        partitions=mine,
        option=json.dumps(mine, separators=(",", ":")),
        solver=split.solver,
        fallback=source == "in-process",
        moves=split.moves,
        generation=split.generation,
        source=source,
    )


def _from_service(
    url: str, group: str, members: list[str], topics: dict[str, int], problem: dict[str, Any], timeout_s: float
) -> tuple[_Split, Source] | None:
    with StickydClient(url, timeout=timeout_s, retries=1) as client:
        for _ in range(ROUNDS):
            try:
                state = client.group(group)
            except StickydError as error:
                if error.status != 404:
                    raise
                state = None
            if state is not None and _covers(state.members, state.topics, members, topics, state.leaving, state.held):
                stats = state.stats or {}
                split = _Split(state.assignment, state.generation, str(stats.get("solver", "-")), 0)
                return split, "stored"
            try:
                answer = client.rebalance_group(group, state.generation if state else -1, problem, kind="consumer")
            except GenerationConflict:
                continue  # another driver rebalanced first: read what it stored
            solution = answer.solution
            assert isinstance(solution, ConsumerSolution)
            split = _Split(solution.assignment, answer.generation, solution.stats.solver, solution.stats.moves)
            return split, "rebalance"
    return None


def _covers(
    stored_members: dict[str, Any],
    stored_topics: dict[str, int],
    members: list[str],
    topics: dict[str, int],
    leaving: list[Any],
    held: list[Any],
) -> bool:
    """The stored split is for exactly these drivers, each reading exactly these topics."""
    if sorted(stored_members) != members or stored_topics != topics or leaving or held:
        return False
    return all(sorted(m.get("topics", [])) == sorted(topics) for m in stored_members.values())


def _in_process(group: str, problem: dict[str, Any], local_dir: str | Path | None) -> _Split:
    last = _last.get(group) or _read_copy(group, local_dir)
    if last is not None:
        for member in problem["members"]:
            owned = last.assignment.get(member["id"])
            if owned:
                member |= {"owned": owned, "generation": last.generation}
    solution = solve_consumer(problem)
    generation = last.generation if last is not None else -1
    return _Split(solution.assignment, generation, solution.stats.solver, solution.stats.moves)


def _remember(group: str, split: _Split, local_dir: str | Path | None) -> None:
    _last[group] = split
    if local_dir is None:
        return
    path = Path(local_dir) / f"{group}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    with os.fdopen(fd, "w") as out:
        json.dump({"generation": split.generation, "assignment": split.assignment}, out)
    os.replace(tmp, path)


def _read_copy(group: str, local_dir: str | Path | None) -> _Split | None:
    if local_dir is None:
        return None
    try:
        data = json.loads((Path(local_dir) / f"{group}.json").read_text())
        return _Split(data["assignment"], int(data["generation"]), "-", 0)
    except FileNotFoundError:
        return None
    except (OSError, ValueError, KeyError, TypeError) as error:
        log.warning("ignoring unreadable local copy for group %s (%s)", group, error)
        return None
