"""Consumer-group benchmark: stickyd `optimal` and `sticky` beside kafka-python's
StickyPartitionAssignor, in one run, over events x subscription shapes x sizes.

    python -m bench.consumer            # the full matrix, up to 1M partitions x 2,000 members
    python -m bench.consumer --quick    # small sizes only

Writes the table to stdout and into bench/RESULTS.md (section "Consumer groups").
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import queue
import random
import time
from typing import Any

import numpy as np

from bench.results import machine_line, write_section
from models import ConsumerProblem, index_consumer_problem
from solvers import solve_consumer

SIZES = [(1_000, 100), (10_000, 1_000), (100_000, 1_000), (1_000_000, 2_000)]
QUICK_SIZES = [(1_000, 100), (10_000, 1_000)]
EVENTS = ["leave", "join", "partitions-added"]
SHAPES = ["equal", "unequal"]
PEER_CAP_S = 120.0


def scenario(partitions: int, members: int, shape: str, event: str, seed: int = 7) -> dict[str, Any]:
    """A group after one rebalance, then one event; claims are the previous optimal answer."""
    rng = random.Random(seed)
    n_topics = max(10, partitions // 1000)
    per_topic = partitions // n_topics
    topics = {f"topic-{t:04d}": per_topic for t in range(n_topics)}
    names = sorted(topics)
    subs = []
    for _ in range(members):
        if shape == "equal":
            subs.append(names)
        else:
            subs.append(sorted(rng.sample(names, rng.randint(1, max(1, n_topics // 2)))))
    covered = set().union(*map(set, subs))
    for t in names:
        if t not in covered:
            subs[rng.randrange(members)].append(t)
    before: dict[str, Any] = {
        "topics": topics,
        "members": [{"id": f"consumer-{m:05d}", "topics": s} for m, s in enumerate(subs)],
        "options": {"time_limit_ms": 600_000},
    }
    previous = solve_consumer(before).assignment
    after_members = [{**m, "owned": previous[m["id"]], "generation": 1} for m in before["members"]]
    after_topics = dict(topics)
    if event == "leave":
        after_members.pop(rng.randrange(len(after_members)))
    elif event == "join":
        join_subs = names if shape == "equal" else sorted(rng.sample(names, max(1, n_topics // 4)))
        after_members.append({"id": "consumer-new", "topics": join_subs})
    else:
        for t in rng.sample(names, max(1, n_topics // 10)):
            after_topics[t] += max(1, per_topic // 10)
    return {"topics": after_topics, "members": after_members}


def figures(problem: dict[str, Any], assignment: dict[str, dict[str, list[int]]]) -> dict[str, int]:
    """moves and loads of any assignment, measured the same way for every peer."""
    index = index_consumer_problem(ConsumerProblem.model_validate(problem))
    position = {m: i for i, m in enumerate(index.members)}
    kept = 0
    loads = np.zeros(index.member_count, dtype=np.int64)
    claims = {g.topics[0]: g.claims[0] for g in index.groups}
    for member, parts in assignment.items():
        m = position[member]
        for topic, partitions in parts.items():
            arr = np.asarray(partitions, dtype=np.int64)
            loads[m] += len(arr)
            kept += int((claims[topic][arr] == m).sum())
    return {"moves": index.owned - kept, "min": int(loads.min()), "max": int(loads.max())}


def _kafka_python_sticky(problem: dict[str, Any], out: Any) -> None:
    from kafka.coordinator.assignors.sticky.sticky_assignor import StickyPartitionAssignor
    from kafka.coordinator.assignors.sticky.user_data import StickyAssignorUserData
    from kafka.protocol.consumer.metadata import ConsumerProtocolSubscription

    class Cluster:
        def topics(self) -> set[str]:
            return set(problem["topics"])

        def partitions_for_topic(self, topic: str) -> set[int] | None:
            count = problem["topics"].get(topic)
            return None if count is None else set(range(count))

    class Member:
        def __init__(self, m: dict[str, Any]) -> None:
            self.member_id = m["id"]
            owned = m.get("owned")
            data = StickyAssignorUserData(list(owned.items()), m.get("generation", -1)) if owned else b""
            self.metadata = ConsumerProtocolSubscription(0, m["topics"], data)

    members = [Member(m) for m in problem["members"]]
    started = time.perf_counter()
    result = StickyPartitionAssignor().assign(Cluster(), members)
    elapsed = time.perf_counter() - started
    assignment: dict[str, dict[str, list[int]]] = {}
    for member_id, answer in result.items():
        assignment[member_id] = {topic: sorted(ps) for topic, ps in answer.assigned_partitions}
    out.put((elapsed, assignment))


def run_peer(problem: dict[str, Any]) -> tuple[float, dict[str, Any]] | None:
    """kafka-python's sticky assignor in a child process, capped at PEER_CAP_S."""
    ctx = mp.get_context("fork")
    out = ctx.Queue()
    child = ctx.Process(target=_kafka_python_sticky, args=(problem, out))
    child.start()
    deadline = time.monotonic() + PEER_CAP_S
    try:
        while time.monotonic() < deadline:
            try:
                return out.get(timeout=0.5)
            except queue.Empty:
                if not child.is_alive() and out.empty():
                    raise RuntimeError("kafka-python's assignor crashed") from None
        return None
    finally:
        child.kill()
        child.join()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="only the small sizes")
    parser.add_argument("--no-peer", action="store_true", help="skip kafka-python")
    args = parser.parse_args()
    rows = []
    peer_gave_up: set[tuple[str, str]] = set()
    header = (
        "| size (P x M) | subscriptions | event | peer | time | moves | lower bound | min/max load |\n"
        "|---|---|---|---|---:|---:|---:|---|"
    )
    print(header, flush=True)
    for partitions, members in QUICK_SIZES if args.quick else SIZES:
        for shape in SHAPES:
            for event in EVENTS:
                problem = scenario(partitions, members, shape, event)
                size = f"{partitions:,} x {members:,}"
                results: list[tuple[str, str, object, str]] = []
                for strategy in ["optimal", "sticky"]:
                    request = {**problem, "options": {"strategy": strategy, "time_limit_ms": 600_000}}
                    started = time.perf_counter()
                    solution = solve_consumer(request)
                    elapsed = time.perf_counter() - started
                    s = solution.stats
                    label = f"stickyd {strategy}" + (" (proven)" if s.optimal else "")
                    results.append((label, f"{elapsed:.3f} s", s.moves, f"{s.min_load}/{s.max_load}"))
                    if strategy == "optimal":
                        bound = s.moves if s.optimal else "-"
                if args.no_peer:
                    pass
                elif (shape, event) in peer_gave_up:
                    results.append(("kafka-python sticky", "skipped (timed out at a smaller size)", "-", "-"))
                else:
                    peer = run_peer(problem)
                    if peer is None:
                        peer_gave_up.add((shape, event))
                        results.append(("kafka-python sticky", f"timed out (> {PEER_CAP_S:.0f} s)", "-", "-"))
                    else:
                        f = figures(problem, peer[1])
                        results.append(
                            ("kafka-python sticky", f"{peer[0]:.3f} s", f["moves"], f"{f['min']}/{f['max']}")
                        )
                for label, t, moves, load in results:
                    line = f"| {size} | {shape} | {event} | {label} | {t} | {moves} | {bound} | {load} |"
                    print(line, flush=True)
                    rows.append(line)
    body = "\n".join(
        [
            machine_line(),
            "",
            "Each scenario is a group after an optimal rebalance, then one event. `lower bound` is the",
            "proven minimum number of moves at the most even balance (from the optimal solver).",
            f"kafka-python is 3.x's StickyPartitionAssignor, run in a child process capped at {PEER_CAP_S:.0f} s.",
            "",
            header,
            *rows,
        ]
    )
    write_section("Consumer groups", body)


if __name__ == "__main__":
    main()
