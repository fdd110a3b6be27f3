"""A deterministic discrete-event simulation of KAFKA-10888: one of 12 partitions sits on a
broker that drains 10x slower. KIP-480's rule (switch when a new batch starts) sends that
partition more than its share; the strictly uniform adaptive rule does not.

    python -m bench.kafka10888
"""

from __future__ import annotations

import random
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from bench.results import write_section
from stickyd.client.partitioner import UniformStickyPartitioner

PARTITIONS = 12
RECORD = 100
BATCH = 16384
FAST_DRAIN = 200
SLOW_DRAIN = 2000
SLOW = 5


class _Cluster:
    def topics(self) -> set[str]:
        return {"t"}

    def partitions_for_topic(self, topic: str) -> set[int]:
        return set(range(PARTITIONS))

    def available_partitions_for_topic(self, topic: str) -> set[int]:
        return set(range(PARTITIONS))


@dataclass
class _Partition:
    drain: int
    open_bytes: int = 0
    has_open: bool = False
    queued: deque[int] = field(default_factory=deque)
    busy_until: int = 0
    in_flight: int = 0


def simulate(rule: str, records: int = 100_000, seed: int = 10888) -> list[int]:
    """Records per partition. Time ticks once per record; a partition's sender takes one
    closed batch at a time and is busy for its drain time; an open batch is taken as soon as
    the sender is free (linger 0)."""
    rng = random.Random(seed)
    parts = [_Partition(SLOW_DRAIN if p == SLOW else FAST_DRAIN) for p in range(PARTITIONS)]
    ours = UniformStickyPartitioner(batch_size=BATCH, adaptive=True, seed=seed, clock=lambda: 0.0)
    cluster = _Cluster()
    counts = [0] * PARTITIONS
    sticky = rng.randrange(PARTITIONS)
    for now in range(records):
        for p, part in enumerate(parts):
            if now >= part.busy_until and part.in_flight:
                ours.acknowledged("t", p, part.in_flight)
                part.in_flight = 0
            if now >= part.busy_until:
                if part.queued:
                    part.in_flight = part.queued.popleft()
                elif part.has_open:
                    part.in_flight, part.open_bytes, part.has_open = part.open_bytes, 0, False
                if part.in_flight:
                    part.busy_until = now + part.drain
        if rule == "kip-480":
            # KIP-480: stick until appending would start a new batch, then move elsewhere
            if not parts[sticky].has_open:
                sticky = rng.choice([p for p in range(PARTITIONS) if p != sticky])
            chosen = sticky
        else:
            chosen = ours.partition("t", None, None, None, b"x" * RECORD, cluster)
            ours.sent("t", chosen, RECORD)
        part = parts[chosen]
        part.has_open = True
        part.open_bytes += RECORD
        if part.open_bytes >= BATCH:
            part.queued.append(part.open_bytes)
            part.open_bytes, part.has_open = 0, False
        counts[chosen] += 1
    return counts


def summary(counts: list[int]) -> dict[str, Any]:
    fast = [c for p, c in enumerate(counts) if p != SLOW]
    mean = sum(counts) / len(counts)
    fast_mean = sum(fast) / len(fast)
    return {
        "slow_share": counts[SLOW] / mean,
        "fast_spread": max(abs(c - fast_mean) / fast_mean for c in fast),
    }


def main() -> None:
    rows = []
    header = (
        "| rule | slow partition / fair share | fast partitions: largest deviation from their mean | "
        "records per partition |\n|---|---:|---:|---|"
    )
    print(header)
    for rule in ["kip-480", "uniform-adaptive"]:
        counts = simulate(rule)
        s = summary(counts)
        line = f"| {rule} | {s['slow_share']:.2f} | {s['fast_spread']:.1%} | {counts} |"
        print(line)
        rows.append(line)
    write_section(
        "Producer partitioner: KAFKA-10888 simulation",
        "\n".join(
            [
                f"Deterministic discrete-event model: {PARTITIONS} partitions, 100,000 records of {RECORD}",
                f"bytes, one per tick, batch.size {BATCH}, linger 0; partition {SLOW}'s broker drains a batch",
                f"in {SLOW_DRAIN} ticks, the others in {FAST_DRAIN}.",
                "",
                header,
                *rows,
            ]
        ),
    )


if __name__ == "__main__":
    main()
