"""One event after a balanced group: the incremental path against the full min-cost flow.

The previous assignment is either stickyd's own optimum (a Kafka-like group, bench/layouts.py,
solved once, its answer sent back as the members' claims) or what Kafka's sticky assignor left
(bench/layouts.py's `sticky` layout). Then one member leaves, one joins (reading every topic, or
a quarter of them when subscriptions are unequal) or a tenth of the topics get a tenth more
partitions. Each request is solved by the dispatcher as it is (`incremental`: the incremental path
first, solvers/consumer/incremental.py) and with that path switched off (`full flow`), in one
process; CPU and wall seconds of `solve_consumer` on the parsed request (index, solver, answer),
the best of `--repeat` runs, and of the index alone.

    python -m bench.incremental.events                    # 1M partitions x 2,000 members
    python -m bench.incremental.events --quick            # 20k x 200, one run: printed, not written
    python -m bench.incremental.events --sizes 100000x1000 --note "quiet machine"
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from unittest import mock

import numpy as np

import stickyd.solvers.consumer.dispatch
from bench.layouts import kafka_like_problem
from bench.results import write_section
from stickyd.models import ConsumerProblem, index_consumer_problem
from stickyd.models.errors import parse
from stickyd.solvers import solve_consumer

SIZES = ((1_000_000, 2_000),)
QUICK = ((20_000, 200),)
SHAPES = ("equal", "unequal")
EVENTS = ("leave", "join", "partitions-added")
PREVIOUS = ("stickyd", "kafka-sticky")
TIME_LIMIT_MS = 60_000  # every row's answer is the solver's own, never a deadline's


@dataclass(frozen=True)
class Timing:
    solver: str
    optimal: bool
    moves: int
    cpu_s: float
    wall_s: float


def after_optimum(partitions: int, members: int, shape: str, event: str, seed: int = 7) -> dict[str, Any]:
    """A Kafka-like group solved by stickyd, its answer as the claims, then `event`."""
    group = kafka_like_problem(partitions, members, layout="sticky", shape=shape, event="leave", seed=seed)
    group["options"] = {"time_limit_ms": TIME_LIMIT_MS}
    answer = solve_consumer(group).assignment
    people = [{**m, "owned": answer.get(m["id"], {}), "generation": 5} for m in group["members"]]
    topics = dict(group["topics"])
    names = sorted(topics)
    rng = np.random.default_rng(seed + 1)
    if event == "leave":
        people.pop(int(rng.integers(len(people))))
    elif event == "join":
        reads = names if shape == "equal" else [t for t in names if rng.random() < 0.25]
        people.append({"id": "consumer-new", "topics": reads})
    else:
        for t in rng.choice(len(names), size=max(1, len(names) // 10), replace=False).tolist():
            topics[names[t]] += max(1, topics[names[t]] // 10)
    return {"topics": topics, "members": people, "options": {"time_limit_ms": TIME_LIMIT_MS}}


def request(previous: str, partitions: int, members: int, shape: str, event: str) -> dict[str, Any]:
    if previous == "stickyd":
        return after_optimum(partitions, members, shape, event)
    problem = kafka_like_problem(partitions, members, layout="sticky", shape=shape, event=event)
    problem["options"] = {"time_limit_ms": TIME_LIMIT_MS}
    return problem


def best_of(repeat: int, run: Callable[[], Any]) -> tuple[float, float, Any]:
    """(CPU s, wall s, last result): the least of each over `repeat` runs."""
    cpu, wall, result = [], [], None
    for _ in range(repeat):
        c, w = time.process_time(), time.perf_counter()
        result = run()
        cpu.append(time.process_time() - c)
        wall.append(time.perf_counter() - w)
    return min(cpu), min(wall), result


def timed(problem: ConsumerProblem, repeat: int, incremental: bool) -> Timing:
    def run() -> Any:
        return solve_consumer(problem)

    if incremental:
        cpu, wall, solution = best_of(repeat, run)
    else:
        with mock.patch.object(stickyd.solvers.consumer.dispatch, "solve_incremental", lambda *_args: None):
            cpu, wall, solution = best_of(repeat, run)
    stats = solution.stats
    return Timing(stats.solver, stats.optimal, stats.moves, cpu, wall)


def rows(sizes: tuple[tuple[int, int], ...], repeat: int, previous: tuple[str, ...]) -> list[str]:
    lines = []
    for partitions, members in sizes:
        for before in previous:
            for shape in SHAPES:
                for event in EVENTS:
                    problem = parse(ConsumerProblem, request(before, partitions, members, shape, event))
                    solve_consumer(problem)  # once untimed: the first solve of a request pays its page faults
                    index_cpu, _, _ = best_of(repeat, lambda p=problem: index_consumer_problem(p))
                    new, old = timed(problem, repeat, True), timed(problem, repeat, False)
                    if (new.moves, new.optimal) != (old.moves, old.optimal):
                        raise AssertionError(f"the paths disagree: {new} against {old}")
                    lines.append(_row(f"{partitions:,} x {members:,}", before, shape, event, index_cpu, new, old))
    return lines


def _row(size: str, before: str, shape: str, event: str, index_cpu: float, new: Timing, old: Timing) -> str:
    proven = "yes" if new.optimal else "no"
    return (
        f"| {size} | {before} | {shape} | {event} | {new.solver} | {proven} | {new.moves:,} | "
        f"{new.cpu_s:.3f} / {new.wall_s:.3f} | {old.solver} | {old.cpu_s:.3f} / {old.wall_s:.3f} | {index_cpu:.3f} |"
    )


def report(lines: list[str], repeat: int, note: str) -> str:
    return (
        "A group whose previous assignment was stickyd's own optimum (`stickyd`) or Kafka's sticky "
        "assignor's (`kafka-sticky`), then one event. `solve_consumer` on the parsed request, as "
        "dispatched (the incremental path first) and with that path switched off (the full flow); "
        f"CPU / wall seconds, the best of {repeat}; `index`: CPU seconds of indexing the request, "
        "part of both. Both paths answer with the same moves and balance (the program checks)."
        + (f" {note}" if note else "")
        + "\n\n| size | previous | subscriptions | event | solver | proven | moves | CPU / wall s | "
        "without it | CPU / wall s | index CPU s |\n|---|---|---|---|---|---|---|---|---|---|---|\n" + "\n".join(lines)
    )


def _sizes(text: str) -> tuple[tuple[int, int], ...]:
    return tuple((int(p), int(m)) for p, m in (size.split("x") for size in text.split(",")))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", help="e.g. 1000000x2000 (the default)")
    parser.add_argument("--quick", action="store_true", help="one run (20000x200 unless --sizes), printed, not written")
    parser.add_argument("--repeat", type=int, default=3, help="runs per row, the best kept")
    parser.add_argument("--previous", default=",".join(PREVIOUS), help="stickyd, kafka-sticky or both")
    parser.add_argument("--note", default="", help="what else ran on the machine")
    args = parser.parse_args()
    previous = tuple(args.previous.split(","))
    if args.quick:
        print(report(rows(_sizes(args.sizes) if args.sizes else QUICK, 1, previous), 1, args.note))
        return
    body = report(rows(_sizes(args.sizes) if args.sizes else SIZES, args.repeat, previous), args.repeat, args.note)
    write_section("Incremental consumer solves", body)
    print(body)


if __name__ == "__main__":
    main()
