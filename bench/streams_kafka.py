"""Kafka's own Streams task assignors beside stickyd on the instances of `bench.streams`
(one standby, caught-up standbys, then join / leave / scale-out by half / restart with lost
state), measured with the same definitions: time, active moves, standby moves, balance.

    python -m bench.streams_kafka            # 1,000 x 100, 2,560 x 50, 10,000 x 1,000
    python -m bench.streams_kafka --quick    # 1,000 x 100 only

The Kafka assignors run in one JVM per assignor and instance (plugins/kafka's test class
`StreamsAssignorBench`, `mvn package` builds it): `ha` HighAvailabilityTaskAssignor (Kafka
Streams' default), `sticky` the KIP-924 StickyTaskAssignor, `broker-sticky` the KIP-1071 group
coordinator's built-in. Each reports what the clients run after that rebalance (warm-ups counted
as standbys), its faster of two runs. stickyd is `solve_streams` in-process: its target and what
runs now (`assignment`, with warm-ups).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from bench.results import write_section
from bench.streams import EVENTS, QUICK_SIZES, SIZES, scenario
from stickyd.models.streams.index import StreamsIndex, index_streams_problem
from stickyd.models.streams.problem import StreamsProblem
from stickyd.solvers import solve_streams
from stickyd.solvers.streams.flow import StreamsTarget
from stickyd.solvers.streams.result import _balance, active_moves, standby_moves
from tests.kafka.jvm import APP_CLASSPATH

BENCH_CLASS = "io.stickyd.kafka.streams.app.StreamsAssignorBench"
KAFKA_ASSIGNORS = {
    "ha": "Kafka HA",
    "sticky": "Kafka sticky (KIP-924)",
    "broker-sticky": "Kafka broker sticky (KIP-1071)",
}


def as_target(index: StreamsIndex, clients: dict[str, dict[str, list[str]]]) -> tuple[StreamsTarget, int]:
    """A clients -> tasks map as the solver's arrays; also the number of tasks not active exactly once."""
    client_of = {c: j for j, c in enumerate(index.clients)}
    task_of = {
        f"{index.subtopologies[int(s)]}_{int(p)}": t
        for t, (s, p) in enumerate(zip(index.task_sub, index.task_partition, strict=True))
    }
    active = np.full(len(task_of), -1, dtype=np.int64)
    standby_lists: list[list[int]] = [[] for _ in task_of]
    wrong = 0
    for client, parts in clients.items():
        for name in parts.get("active", []):
            t = task_of[name]
            wrong += int(active[t] >= 0)
            active[t] = client_of[client]
        for name in parts.get("standby", []):
            standby_lists[task_of[name]].append(client_of[client])
    wrong += int((active < 0).sum())
    width = max(1, max(len(s) for s in standby_lists))
    standby = np.full((len(task_of), width), -1, dtype=np.int64)
    for t, holders in enumerate(standby_lists):
        standby[t, : len(holders)] = holders
    return StreamsTarget(active=np.maximum(active, 0), standby=standby), wrong


def row(size: str, event: str, name: str, seconds: float | None, index: StreamsIndex, clients: Any) -> str:
    if clients is None:
        return f"| {size} | {event} | {name} | > {seconds:.0f} s (stopped) | | | | | | |"
    target, wrong = as_target(index, clients)
    b = _balance(index, target)
    return (
        f"| {size} | {event} | {name} | {seconds:.3f} s | {active_moves(index, target)} | "
        f"{standby_moves(index, target)} | {b.active} | {b.stateful} | {b.subtopology_spread} | {wrong} |"
    )


def run_kafka(problem_file: Path, assignor: str, timeout_s: float) -> tuple[float, Any]:
    try:
        done = subprocess.run(
            ["java", "-Xmx2g", "-XX:+UseSerialGC", "-cp", APP_CLASSPATH, BENCH_CLASS, str(problem_file), assignor],
            capture_output=True,
            timeout=timeout_s,
            check=True,
        )
    except subprocess.TimeoutExpired:
        return timeout_s, None
    except subprocess.CalledProcessError as failed:
        raise RuntimeError(f"{assignor} failed: {failed.stderr.decode(errors='replace')[-1500:]}") from None
    result = json.loads(done.stdout)[assignor]
    return result["time_ms"] / 1000, result["clients"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--timeout-s", type=float, default=120.0, help="per Kafka assignor and instance")
    args = parser.parse_args()
    header = (
        "| size (tasks x clients) | event | assignor | time | active moves | standby moves | "
        "active [min, max] | stateful [min, max] | subtopology spread | tasks not active once |\n"
        "|---|---|---|---:|---:|---:|---|---|---:|---:|"
    )
    print(header, flush=True)
    rows = []
    with tempfile.TemporaryDirectory(prefix="streams-kafka-") as tmp:
        for tasks, clients in QUICK_SIZES if args.quick else SIZES:
            size = f"{tasks:,} x {clients:,}"
            for event in EVENTS:
                problem = scenario(tasks, clients, event)
                problem_file = Path(tmp) / "problem.json"
                problem_file.write_text(json.dumps(problem))
                index = index_streams_problem(StreamsProblem.model_validate(problem))
                started = time.perf_counter()
                solution = solve_streams({**problem, "options": {"time_limit_ms": 600_000}})
                elapsed = time.perf_counter() - started
                target = {c: {"active": t.active, "standby": t.standby} for c, t in solution.target.items()}
                now = {c: {"active": a.active, "standby": a.standby + a.warmup} for c, a in solution.assignment.items()}
                lines = [
                    row(size, event, "stickyd target", elapsed, index, target),
                    row(size, event, "stickyd runs now", elapsed, index, now),
                ]
                for assignor, label in KAFKA_ASSIGNORS.items():
                    seconds, assigned = run_kafka(problem_file, assignor, args.timeout_s)
                    lines.append(row(size, event, label, seconds, index, assigned))
                for line in lines:
                    print(line, flush=True)
                rows += lines
    write_section(
        "Kafka Streams: Kafka's assignors beside stickyd",
        "\n".join(
            [
                "Instances of `bench.streams` (10 subtopologies, 7 stateful, one standby, warm-ups 2, "
                "acceptable lag 10,000; standbys caught up at lag 100, newcomers without state). Same "
                "definitions for all rows: active moves = stateful actives whose previous owner no "
                "longer runs them; standby moves = previous standby replicas whose client no longer "
                "holds the task; balance as stickyd's `stats.balance` (warm-ups count as standbys in "
                "what runs now). Kafka's times are the faster of two runs in a warm JVM; stickyd's is "
                "one in-process solve.",
                "",
                header,
                *rows,
            ]
        ),
    )


if __name__ == "__main__":
    main()
