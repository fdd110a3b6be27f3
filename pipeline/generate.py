"""`stickyd pipeline generate`: seeded synthetic fleets, traffic metrics and churn traces.

Shapes follow what platform teams see: most groups are small, a few are huge (sizes drawn as
`low * (high/low) ** (u ** 2)`), topics are shared across the fleet, and each group arrives with
a previous assignment that recent churn left behind (members that joined own nothing, members
that left took their claims with them, now and then a stale claim from an older generation).
"""

from __future__ import annotations

import datetime as dt
import json
import random
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from stickyd.pipeline.churn.traces import EVENT_TYPES

PARTITION_COUNTS = (1, 3, 6, 8, 12, 16, 24, 32, 48, 64)


@dataclass(frozen=True)
class FleetShape:
    groups: int = 1000
    streams_share: float = 0.15
    max_members: int = 2000
    max_topics: int = 500
    max_clients: int = 200
    max_subtopologies: int = 20


MAX_SUBSCRIPTIONS = 100_000
"""members x subscribed topics of one group: huge groups read few topics, wide ones have few members."""


def skewed(rng: random.Random, low: int, high: int, power: float = 3.0) -> int:
    """Mostly near `low`, now and then up to `high` (median about low * (high/low) ** 0.125)."""
    return max(low, min(high, round(low * (high / low) ** (rng.random() ** power))))


def topic_pool(seed: int, groups: int) -> dict[str, int]:
    """The fleet's topics with their partition counts (shared by every group and the metrics)."""
    rng = random.Random(f"{seed}-topics")
    size = max(60, min(5000, groups // 2))
    return {f"topic-{i:04d}": rng.choice(PARTITION_COUNTS) for i in range(size)}


def consumer_problem(rng: random.Random, pool: dict[str, int], shape: FleetShape) -> dict[str, Any]:
    names = list(pool)
    chosen = rng.sample(names, skewed(rng, 1, min(shape.max_topics, len(names))))
    topics = {t: pool[t] for t in chosen}
    copartitioned: list[list[str]] = []
    if rng.random() < 0.15:  # a stream join: two topics with the same partition count (KIP-315)
        count = rng.choice(PARTITION_COUNTS[1:])
        pair = [t for t in names if pool[t] == count][:2]
        if len(pair) == 2:
            # most join applications read just the joined pair; some read other topics too
            topics = {t: count for t in pair} | ({t: pool[t] for t in chosen[:3]} if rng.random() < 0.2 else {})
            copartitioned.append(pair)
    total = sum(topics.values())
    size = min(skewed(rng, 2, shape.max_members), max(2, total + total // 5), max(2, MAX_SUBSCRIPTIONS // len(topics)))
    member_ids = [f"consumer-{i}" for i in range(size)]
    subscriptions = _subscriptions(rng, member_ids, list(topics), copartitioned)
    owned = _previous_owners(rng, member_ids, subscriptions, topics, copartitioned)
    generation = rng.randint(3, 50)
    members = []
    for member in member_ids:
        entry: dict[str, Any] = {"id": member, "topics": subscriptions[member]}
        if owned.get(member):
            entry |= {"owned": owned[member], "generation": generation}
        members.append(entry)
    if rng.random() < 0.03 and len(members) > 2 and members[0].get("owned"):
        stale = dict(members[0]["owned"])  # a member that missed a rebalance still claims its old partitions
        members[1] = {**members[1], "owned": {**members[1].get("owned", {}), **stale}, "generation": generation - 1}
    problem: dict[str, Any] = {"topics": topics, "members": members}
    if copartitioned:
        problem["copartitioned"] = copartitioned
    return problem


def _subscriptions(
    rng: random.Random, members: list[str], topics: list[str], copartitioned: list[list[str]]
) -> dict[str, list[str]]:
    if rng.random() < 0.6 or len(topics) == 1:  # equal subscriptions: one application, many instances
        return {m: sorted(topics) for m in members}
    cohorts = []  # unequal: a few deployments of different versions share the group
    for _ in range(rng.randint(2, 4)):
        subset = set(rng.sample(topics, rng.randint(1, len(topics))))
        for pair in copartitioned:
            if subset & set(pair):
                subset |= set(pair)
        cohorts.append(sorted(subset))
    return {m: cohorts[i % len(cohorts)] for i, m in enumerate(members)}


def _previous_owners(
    rng: random.Random,
    members: list[str],
    subscriptions: dict[str, list[str]],
    topics: dict[str, int],
    copartitioned: list[list[str]],
) -> dict[str, dict[str, list[int]]]:
    """Round robin over last round's members: some of today's are new, some of then's are gone."""
    joined = set(rng.sample(members, min(len(members) - 1, rng.randint(0, 3))))
    left = [f"departed-{i}" for i in range(rng.randint(0, 3))]
    previous = [m for m in members if m not in joined] + left
    readers = {t: [m for m in previous if m in left or t in subscriptions[m]] for t in topics}
    joined_topic = {t: pair[0] for pair in copartitioned for t in pair}
    owned: dict[str, dict[str, list[int]]] = {}
    offset = rng.randrange(len(previous))
    for topic, count in topics.items():
        owners = readers[joined_topic.get(topic, topic)]
        if not owners:
            continue
        for p in range(count):
            owner = owners[(p + offset) % len(owners)]
            if owner in subscriptions and topic in subscriptions[owner]:
                owned.setdefault(owner, {}).setdefault(topic, []).append(p)
    return owned


def streams_problem(rng: random.Random, shape: FleetShape) -> dict[str, Any]:
    counts = [rng.choice(PARTITION_COUNTS[:8]) for _ in range(skewed(rng, 1, shape.max_subtopologies))]
    subtopologies = [{"id": f"sub{i}", "partitions": n, "stateful": rng.random() < 0.7} for i, n in enumerate(counts)]
    tasks = [f"sub{i}_{p}" for i, n in enumerate(counts) for p in range(n)]
    size = min(skewed(rng, 2, shape.max_clients), max(2, len(tasks)))
    clients: list[dict[str, Any]] = [{"id": f"instance-{i}", "capacity": rng.choice((1, 1, 2, 4))} for i in range(size)]
    standbys = min(size - 1, rng.choices((0, 1, 2), weights=(40, 45, 15))[0])
    survivors = clients[: max(1, size - rng.randint(0, 2))]  # the last ones joined since
    offset = rng.randrange(len(survivors))
    for t, task in enumerate(tasks):
        owner = survivors[(t + offset) % len(survivors)]
        owner.setdefault("active", []).append(task)
        for k in range(1, standbys + 1):
            if len(survivors) > k:
                holder = survivors[(t + offset + k) % len(survivors)]
                holder.setdefault("standby", []).append(task)
                holder.setdefault("lags", {})[task] = rng.choice((0, 0, 500, 5_000, 50_000))
    config = {"num_standby_replicas": standbys, "max_warmup_replicas": 2, "acceptable_recovery_lag": 10_000}
    return {"subtopologies": subtopologies, "clients": clients, "config": config}


def fleet_rows(seed: int, shape: FleetShape) -> Iterator[dict[str, Any]]:
    pool = topic_pool(seed, shape.groups)
    for g in range(shape.groups):
        rng = random.Random(f"{seed}-group-{g}")
        if rng.random() < shape.streams_share:
            yield {"group_id": f"app-{g:06d}", "kind": "streams", "problem": streams_problem(rng, shape)}
        else:
            yield {"group_id": f"group-{g:06d}", "kind": "consumer", "problem": consumer_problem(rng, pool, shape)}


def metrics_rows(seed: int, groups: int, minutes: int = 10) -> Iterator[dict[str, Any]]:
    """Per partition and minute: records and bytes, with a few hot partitions per topic."""
    start = dt.datetime(2026, 11, 1, tzinfo=dt.UTC)
    for topic, count in topic_pool(seed, groups).items():
        rng = random.Random(f"{seed}-traffic-{topic}")
        base = rng.choice((10, 100, 1_000, 10_000))
        size = rng.choice((100, 500, 2_000))
        heat = [rng.choice((1.0, 1.0, 1.0, 4.0)) for _ in range(count)]
        for minute in range(minutes):
            at = start + dt.timedelta(minutes=minute)
            for p in range(count):
                records = int(base * heat[p] * rng.uniform(0.8, 1.2))
                yield {"topic": topic, "partition": p, "minute": at, "records": records, "bytes": records * size}


def trace_rows(seed: int, traces: int, events: int = 20) -> Iterator[dict[str, Any]]:
    for t in range(traces):
        rng = random.Random(f"{seed}-trace-{t}")
        yield churn_trace(rng, f"trace-{t:05d}", events)


def churn_trace(rng: random.Random, trace_id: str, events: int) -> dict[str, Any]:
    topics = {f"t{i}": rng.choice(PARTITION_COUNTS[1:8]) for i in range(rng.randint(1, 5))}
    copartitioned: list[list[str]] = []
    if len(topics) >= 2 and rng.random() < 0.2:
        copartitioned = [["t0", "t1"]]
        topics["t1"] = topics["t0"]
    names = sorted(topics)
    unequal = rng.random() < 0.3

    def subscription() -> list[str]:
        if not unequal:
            return names
        chosen = set(rng.sample(names, rng.randint(1, len(names))))
        if copartitioned and chosen & {"t0", "t1"}:
            chosen |= {"t0", "t1"}
        return sorted(chosen)

    counter = 0

    def new_member() -> dict[str, Any]:
        nonlocal counter
        counter += 1
        return {"id": f"m{counter}", "topics": subscription()}

    members = [new_member() for _ in range(rng.randint(2, 12))]
    present = [m["id"] for m in members]
    current = dict(topics)
    out: list[dict[str, Any]] = []
    for _ in range(events):
        kind = rng.choices(EVENT_TYPES, weights=EVENT_WEIGHTS)[0]
        if kind in ("leave", "crash") and len(present) > 1:
            gone = rng.choice(present)
            present.remove(gone)
            out.append({"type": kind, "member_ids": [gone]})
        elif kind == "partitions_added":
            grown = rng.choice(names)
            together = copartitioned[0] if copartitioned and grown in copartitioned[0] else [grown]
            count = current[grown] + rng.randint(1, max(1, current[grown] // 2))
            current.update({t: count for t in together})
            out.append({"type": kind, "topics": {t: count for t in together}})
        else:  # a join, a scale-out, or a leave that would empty the group becomes a join
            joining = [new_member() for _ in range(rng.randint(2, 5) if kind == "scale_out" else 1)]
            present += [m["id"] for m in joining]
            out.append({"type": "scale_out" if kind == "scale_out" else "join", "members": joining})
    return {"trace_id": trace_id, "topics": topics, "members": members, "copartitioned": copartitioned, "events": out}


EVENT_WEIGHTS = (30, 25, 15, 15, 15)
"""How often each of EVENT_TYPES happens in a generated trace."""


def write_jsonl(path: Path, rows: Iterator[dict[str, Any]]) -> int:
    path.parent.mkdir(parents=True, exist_ok=True)
    count = 0
    with path.open("w") as out:
        for row in rows:
            out.write(json.dumps(row, separators=(",", ":"), default=str) + "\n")
            count += 1
    return count


def write_parquet(path: Path, rows: Iterator[dict[str, Any]], stringify: tuple[str, ...] = ()) -> int:
    """Rows to one Parquet file, in chunks; `stringify` columns are written as JSON text."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    path.parent.mkdir(parents=True, exist_ok=True)
    writer: pq.ParquetWriter | None = None
    count = 0
    chunk: list[dict[str, Any]] = []

    def flush() -> None:
        nonlocal writer
        table = pa.Table.from_pylist(chunk)
        if writer is None:
            writer = pq.ParquetWriter(path, table.schema)
        writer.write_table(table)
        chunk.clear()

    for row in rows:
        chunk.append({k: json.dumps(v, separators=(",", ":")) if k in stringify else v for k, v in row.items()})
        count += 1
        if len(chunk) >= 50_000:
            flush()
    if chunk or writer is None:
        flush()
    if writer is not None:
        writer.close()
    return count
