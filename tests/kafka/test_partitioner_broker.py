"""The producer partitioners against a real broker: batching, uniformity, nothing lost."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from kafka.partitioner import DefaultPartitioner
from kafka.partitioner.sticky import StickyPartitioner

from bench.partitioner import run
from client.partitioner import UniformStickyPartitioner
from tests.kafka.broker import tansu_broker

RECORDS = 20_000


@pytest.fixture(scope="module")
def results() -> Iterator[dict[str, dict]]:
    with tansu_broker() as bootstrap:
        yield {
            "default": run(bootstrap, "p-default", DefaultPartitioner(), RECORDS),
            "kip480": run(bootstrap, "p-kip480", StickyPartitioner(), RECORDS),
            "ours": run(bootstrap, "p-ours", UniformStickyPartitioner(), RECORDS),
        }


def test_every_record_is_acknowledged_and_consumed_back(results: dict[str, dict]) -> None:
    for r in results.values():
        assert sum(r["counts"]) == RECORDS
        assert r["consumed"] == RECORDS


def test_batches_are_five_times_the_defaults_and_as_full_as_kip480s(results: dict[str, dict]) -> None:
    ours = results["ours"]["records_per_batch"]
    assert ours >= 5 * results["default"]["records_per_batch"]
    # measured here: 49.8 against KIP-480's 50.0; both fill one 50-record burst per batch
    assert ours >= 0.95 * results["kip480"]["records_per_batch"]


def test_every_partition_within_5_percent_of_the_mean(results: dict[str, dict]) -> None:
    assert results["ours"]["max_deviation"] <= 0.05
