"""The Structured Streaming helper: each driver's `assign` option from the group stickyd keeps,
disjoint, complete and sticky, one generation for drivers starting together."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest

from stickyd.cli.child_service import ServiceProcess
from stickyd.pipeline.kafka_assign import DriverShare, kafka_assign

TOPICS = {"clicks": 12, "views": 6}


def shares(group: str, drivers: list[str], url: str | None) -> dict[str, dict[str, list[int]]]:
    return {d: json.loads(kafka_assign(group, d, drivers, TOPICS, url).option) for d in drivers}


def owner_of(split: dict[str, dict[str, list[int]]]) -> dict[tuple[str, int], str]:
    return {(t, p): d for d, parts in split.items() for t, ps in parts.items() for p in ps}


def everything() -> list[tuple[str, int]]:
    return sorted((t, p) for t, n in TOPICS.items() for p in range(n))


def test_drivers_split_every_partition_once_through_the_service(service: ServiceProcess) -> None:
    split = shares("split-once", ["d0", "d1", "d2"], service.url)
    assert sorted(owner_of(split)) == everything()
    assert sorted(sum(len(ps) for ps in parts.values()) for parts in split.values()) == [6, 6, 6]
    # the option is what Spark's Kafka source takes: {"topic": [partitions]}
    option = kafka_assign("split-once", "d0", ["d0", "d1", "d2"], TOPICS, service.url).option
    assert option == json.dumps(split["d0"], separators=(",", ":"))


def test_three_drivers_starting_at_the_same_moment_get_one_split_and_one_generation(service: ServiceProcess) -> None:
    drivers = ["d0", "d1", "d2"]
    barrier = threading.Barrier(3)
    got: dict[str, DriverShare] = {}

    def start(driver: str) -> None:
        barrier.wait()
        got[driver] = kafka_assign("together", driver, drivers, TOPICS, service.url)

    threads = [threading.Thread(target=start, args=(d,)) for d in drivers]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert {s.generation for s in got.values()} == {0}
    assert sorted(s.source for s in got.values()) == ["rebalance", "stored", "stored"]
    assert sorted(owner_of({d: s.partitions for d, s in got.items()})) == everything()
    assert not any(s.fallback for s in got.values())


def test_restart_gets_back_the_same_partitions_at_the_same_generation(service: ServiceProcess) -> None:
    first = kafka_assign("restart", "d1", ["d0", "d1"], TOPICS, service.url)
    again = kafka_assign("restart", "d1", ["d0", "d1"], TOPICS, service.url)
    assert again.option == first.option and again.generation == first.generation and again.source == "stored"


def test_a_new_driver_takes_only_its_share_in_a_new_generation(service: ServiceProcess) -> None:
    before = owner_of(shares("grow", ["d0", "d1"], service.url))
    share = kafka_assign("grow", "d2", ["d0", "d1", "d2"], TOPICS, service.url)
    assert share.source == "rebalance" and share.generation == 1 and share.moves == 6
    after = owner_of(shares("grow", ["d0", "d1", "d2"], service.url))
    moved = [tp for tp, d in after.items() if before[tp] != d]
    assert len(moved) == 6 and all(after[tp] == "d2" for tp in moved)


def test_service_down_falls_back_in_process_from_the_local_copy(service: ServiceProcess, tmp_path: Path) -> None:
    served = {
        d: kafka_assign("down", d, ["d0", "d1", "d2"], TOPICS, service.url, local_dir=tmp_path)
        for d in ["d0", "d1", "d2"]
    }
    # a driver that has seen generation g keeps its partitions when the service is gone
    share = kafka_assign("down", "d0", ["d0", "d1", "d2"], TOPICS, "http://127.0.0.1:9", local_dir=tmp_path)
    assert share.fallback and share.source == "in-process"
    assert share.partitions == served["d0"].partitions and share.generation == served["d0"].generation
    assert share.moves == 0


def test_unknown_driver_is_refused() -> None:
    with pytest.raises(ValueError, match="driver: 'dx' is not in drivers"):
        kafka_assign("clickstream", "dx", ["d0"], TOPICS)
