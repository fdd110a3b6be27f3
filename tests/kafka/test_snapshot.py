"""`stickyd snapshot` against the real Apache Kafka test broker: groups formed by real consumers (classic
Range, classic RoundRobin, and the KIP-848 consumer protocol) are read back exactly as they stand
(members, subscriptions, assignment, racks, lag), and `stickyd pipeline plan` on the snapshot gives
the moves a direct solve of the same groups gives."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from stickyd.models import ConsumerProblem
from stickyd.solvers import solve_consumer
from tests.kafka.apache_kafka import ApacheKafka

STICKYD = [sys.executable, "-m", "stickyd.cli"]
TOPICS = {"snap-orders": 6, "snap-payments": 3}
RECORDS_PER_PARTITION = 10


@dataclass
class RealMember:
    """One consumer the test started, and what it was told to be."""

    consumer: Consumer
    group: str
    subscription: tuple[str, ...]
    rack: str | None

    def assignment(self) -> dict[str, list[int]]:
        out: dict[str, list[int]] = {}
        for tp in self.consumer.assignment():
            out.setdefault(tp.topic, []).append(tp.partition)
        return {t: sorted(p) for t, p in sorted(out.items())}


# (group, classic assignor or None for the KIP-848 protocol, [(subscription, rack) per member])
GROUPS: list[tuple[str, str | None, list[tuple[tuple[str, ...], str | None]]]] = [
    ("snap-range", "range", [(("snap-orders",), "az1"), (("snap-orders", "snap-payments"), None)]),
    ("snap-roundrobin", "roundrobin", [(("snap-orders",), None)] * 3),
    ("snap-kip848", None, [(("snap-orders",), "az2"), (("snap-orders", "snap-payments"), "az1")]),
]


def _consumer(bootstrap: str, group: str, assignor: str | None, rack: str | None) -> Consumer:
    config: dict[str, Any] = {"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False}
    if assignor is None:
        config["group.protocol"] = "consumer"
    else:
        config.update({"partition.assignment.strategy": assignor, "session.timeout.ms": 6000,
                       "heartbeat.interval.ms": 500})  # fmt: skip
    if rack is not None:
        config["client.rack"] = rack
    return Consumer(config)


def _settled(members: list[RealMember]) -> bool:
    """Every group owns every partition of the topics its members subscribe to, once."""
    for group, _, _ in GROUPS:
        mine = [m for m in members if m.group == group]
        owned = [(t, p) for m in mine for t, ps in m.assignment().items() for p in ps]
        wanted = {(t, p) for m in mine for t in m.subscription for p in range(TOPICS[t])}
        if sorted(owned) != sorted(wanted) or len(owned) != len(set(owned)):
            return False
    return True


@pytest.fixture(scope="module")
def real_groups(apache_kafka: ApacheKafka) -> Iterator[list[RealMember]]:
    """The three groups, settled, with offsets committed (partition p at offset p + 1), polled in the
    background so they stay members while the test reads them."""
    bootstrap = apache_kafka.bootstrap
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic(t, n, 1) for t, n in TOPICS.items()]).values():
        future.result(timeout=30)
    producer = Producer({"bootstrap.servers": bootstrap})
    for topic, count in TOPICS.items():
        for p in range(count):
            for n in range(RECORDS_PER_PARTITION):
                producer.produce(topic, value=str(n).encode(), partition=p)
    assert producer.flush(30) == 0
    members = [
        RealMember(_consumer(bootstrap, group, assignor, rack), group, subscription, rack)
        for group, assignor, shape in GROUPS
        for subscription, rack in shape
    ]
    for m in members:
        m.consumer.subscribe(list(m.subscription))
    deadline = time.monotonic() + 60
    while not _settled(members):
        assert time.monotonic() < deadline, "groups did not settle in 60 s"
        for m in members:
            m.consumer.poll(0.05)
    for m in members:
        offsets = [TopicPartition(t, p, p + 1) for t, ps in m.assignment().items() for p in ps]
        if offsets:
            m.consumer.commit(offsets=offsets, asynchronous=False)
    stop = threading.Event()

    def keep_polling() -> None:
        while not stop.is_set():
            for m in members:
                m.consumer.poll(0.05)

    poller = threading.Thread(target=keep_polling, daemon=True)
    poller.start()
    try:
        yield members
    finally:
        stop.set()
        poller.join(timeout=10)
        for m in members:
            m.consumer.close()


@pytest.fixture(scope="module")
def snapshot_dir(
    real_groups: list[RealMember], apache_kafka: ApacheKafka, tmp_path_factory: pytest.TempPathFactory
) -> Path:
    out = tmp_path_factory.mktemp("snapshot")
    groups = [arg for group, _, _ in GROUPS for arg in ("--group", group)]
    result = subprocess.run(
        [*STICKYD, "snapshot", "--bootstrap-server", apache_kafka.bootstrap, "--out", str(out), *groups,
         "--group", "snap-nobody", "--config", "client.id=stickyd-snapshot-test", "--rate-window-s", "0.5"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "3 groups (7 members" in result.stderr and "skipped snap-nobody: no such group" in result.stderr
    assert re.search(r"produce rates of \d+ partitions over \d+\.\d s \(total 0\.0 records/s\)", result.stderr)
    return out


def _rows(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_snapshot_equals_the_groups_real_members_subscriptions_assignment_and_racks(
    real_groups: list[RealMember], snapshot_dir: Path
) -> None:
    fleet = {row["group_id"]: row for row in _rows(snapshot_dir / "fleet.jsonl")}
    assert sorted(fleet) == sorted(g for g, _, _ in GROUPS)
    for group, assignor, _ in GROUPS:
        problem = fleet[group]["problem"]
        ConsumerProblem.model_validate(problem)  # the contract's format, as `pipeline plan` reads it
        real = {m.consumer.memberid(): m for m in real_groups if m.group == group}
        snapped = {m["id"]: m for m in problem["members"]}
        assert sorted(snapped) == sorted(real)
        for member_id, m in real.items():
            assert tuple(snapped[member_id]["topics"]) == m.subscription
            assert snapped[member_id].get("owned", {}) == m.assignment()
            assert snapped[member_id].get("rack") == m.rack
            if assignor is None:  # KIP-848: the member epoch is a generation > 0
                assert snapped[member_id]["generation"] > 0
        assert problem["topics"] == {t: TOPICS[t] for t in sorted({t for m in real.values() for t in m.subscription})}
        assert problem["options"]["protocol"] == ("cooperative" if assignor is None else "eager")
    described = {row["group_id"]: row for row in _rows(snapshot_dir / "groups.jsonl")}
    assert described["snap-range"]["protocol"] == "classic" and described["snap-range"]["assignor"] == "range"
    assert described["snap-roundrobin"]["assignor"] == "roundrobin"
    assert described["snap-kip848"]["protocol"] == "consumer" and described["snap-kip848"]["epoch"] > 0


def test_snapshot_lag_is_end_offset_minus_committed_per_owned_partition_with_its_rate(
    real_groups: list[RealMember], snapshot_dir: Path
) -> None:
    lag = {(r["group_id"], r["topic"], r["partition"]): r for r in _rows(snapshot_dir / "lag.jsonl")}
    for m in real_groups:
        for topic, parts in m.assignment().items():
            for p in parts:
                row = lag.pop((m.group, topic, p))
                assert row["committed_offset"] == p + 1 and row["end_offset"] == RECORDS_PER_PARTITION
                assert row["lag"] == RECORDS_PER_PARTITION - (p + 1)
                assert row["member"] == m.consumer.memberid()
                assert row["rate"] == 0.0  # nothing was produced between the snapshot's two readings
    assert lag == {}  # no row for a partition the groups do not use


def test_pipeline_plan_on_the_snapshot_gives_the_moves_stickyd_would_make(
    snapshot_dir: Path, spark: Any, tmp_path: Path
) -> None:
    """Range left the unequal subscriptions unbalanced (3 vs 6), so stickyd moves partitions there;
    RoundRobin's 2-2-2 is already optimal, so nothing moves. (The plan runs on the test run's shared
    SparkSession, as `stickyd pipeline plan` would.)"""
    import pandas as pd

    from stickyd.pipeline.plan import PlanOptions, plan

    summary = plan(spark, PlanOptions(str(snapshot_dir / "fleet.jsonl"), tmp_path / "plan"))
    assert (summary.solved, summary.rejected) == (3, 0)
    stats = pd.read_parquet(tmp_path / "plan" / "stats").set_index("group_id")
    for row in _rows(snapshot_dir / "fleet.jsonl"):
        direct = solve_consumer(row["problem"]).stats
        assert stats.loc[row["group_id"], "moves"] == direct.moves, row["group_id"]
        assert stats.loc[row["group_id"], "balance"] == direct.max_load - direct.min_load
    assert stats.loc["snap-range", "moves"] > 0 and stats.loc["snap-range", "balance"] <= 1
    assert stats.loc["snap-roundrobin", "moves"] == 0
