"""The Structured Streaming helper: each driver's `assign` option, disjoint, complete and sticky."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cli.child_service import ServiceProcess
from pipeline.kafka_assign import kafka_assign

TOPICS = {"clicks": 12, "views": 6}


def shares(state: Path, drivers: list[str], url: str | None) -> dict[str, dict[str, list[int]]]:
    return {d: json.loads(kafka_assign("clickstream", d, drivers, TOPICS, state, url).option) for d in drivers}


def owner_of(split: dict[str, dict[str, list[int]]]) -> dict[tuple[str, int], str]:
    return {(t, p): d for d, parts in split.items() for t, ps in parts.items() for p in ps}


def test_drivers_split_every_partition_once_through_the_service(tmp_path: Path, service: ServiceProcess) -> None:
    split = shares(tmp_path, ["d0", "d1", "d2"], service.url)
    owners = owner_of(split)
    assert sorted(owners) == sorted((t, p) for t, n in TOPICS.items() for p in range(n))
    assert sorted(sum(len(ps) for ps in parts.values()) for parts in split.values()) == [6, 6, 6]
    # the option is what Spark's Kafka source takes: {"topic": [partitions]}
    option = kafka_assign("clickstream", "d0", ["d0", "d1", "d2"], TOPICS, tmp_path, service.url).option
    assert option == json.dumps(split["d0"], separators=(",", ":"))


def test_restart_gets_back_the_same_partitions(tmp_path: Path, service: ServiceProcess) -> None:
    first = kafka_assign("clickstream", "d1", ["d0", "d1"], TOPICS, tmp_path, service.url)
    again = kafka_assign("clickstream", "d1", ["d0", "d1"], TOPICS, tmp_path, service.url)
    assert again.option == first.option and again.moves == 0 and again.generation == first.generation + 1


def test_a_new_driver_takes_only_its_share(tmp_path: Path, service: ServiceProcess) -> None:
    before = owner_of(shares(tmp_path, ["d0", "d1"], service.url))
    after = owner_of(shares(tmp_path, ["d0", "d1", "d2"], service.url))
    moved = [tp for tp, d in after.items() if before[tp] != d]
    assert len(moved) == 6 and all(after[tp] == "d2" for tp in moved)


def test_service_down_falls_back_in_process_with_the_same_answer(tmp_path: Path, service: ServiceProcess) -> None:
    served = shares(tmp_path / "a", ["d0", "d1", "d2"], service.url)
    share = kafka_assign("clickstream", "d0", ["d0", "d1", "d2"], TOPICS, tmp_path / "b", "http://127.0.0.1:9")
    assert share.partitions == served["d0"] and share.solver == "direct-equal"


def test_unknown_driver_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="driver: 'dx' is not in drivers"):
        kafka_assign("clickstream", "dx", ["d0"], TOPICS, tmp_path)
