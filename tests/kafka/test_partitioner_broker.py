"""The producer partitioners against the session's real Apache Kafka broker: batching, uniformity,
nothing lost."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
from kafka.partitioner import DefaultPartitioner
from kafka.partitioner.sticky import StickyPartitioner

from bench.broker.partitioner import RECORD_BYTES, run
from stickyd.client.partitioner import UniformStickyPartitioner
from tests.kafka.apache_kafka import ApacheKafka

RECORDS = 20_000
BATCH_SIZE = 16_384
"""kafka-python's default batch_size, which the partitioner's stints follow."""


@pytest.fixture(scope="module")
def results(apache_kafka: ApacheKafka) -> Iterator[dict[str, dict]]:
    bootstrap = apache_kafka.bootstrap
    suffix = uuid.uuid4().hex[:8]
    yield {
        "default": run(bootstrap, f"p-default-{suffix}", DefaultPartitioner(), RECORDS),
        "kip480": run(bootstrap, f"p-kip480-{suffix}", StickyPartitioner(), RECORDS),
        "ours": run(bootstrap, f"p-ours-{suffix}", UniformStickyPartitioner(), RECORDS),
    }


def test_every_record_is_acknowledged_and_consumed_back(results: dict[str, dict]) -> None:
    for r in results.values():
        assert sum(r["counts"]) == RECORDS
        assert r["consumed"] == RECORDS


def test_batches_are_five_times_the_defaults_and_as_full_as_kip480s(results: dict[str, dict]) -> None:
    ours = results["ours"]["records_per_batch"]
    assert ours >= 5 * results["default"]["records_per_batch"]
    # measured on a quiet machine: 49.8 against KIP-480's 50.0, both filling one 50-record burst per
    # batch; on a loaded one the sender drains batches in the middle of a burst, and the two runs
    # (one after the other) were measured at 34.8 and 36.9
    assert ours >= 0.8 * results["kip480"]["records_per_batch"]


def test_partition_counts_stay_within_the_byte_ledgers_bound(results: dict[str, dict]) -> None:
    """A new cycle takes only partitions less than a batch ahead of the least-fed one, and a stint
    is at most a batch (it ends earlier at a batch boundary once half full), so no partition gets
    more than two batches' bytes ahead of another, however long the run. On a real broker the
    sender drains batches while a burst is still being appended, so stints vary (82-164 records
    measured), and at 20,000 records a single stint is up to 10% of
    a partition's mean: the 5%-of-the-mean target holds at its 100,000 records
    (`python -m bench.broker.partitioner`, bench/RESULTS.md), not at this test's 20,000."""
    counts = results["ours"]["counts"]
    assert (max(counts) - min(counts)) * RECORD_BYTES <= 2 * BATCH_SIZE
