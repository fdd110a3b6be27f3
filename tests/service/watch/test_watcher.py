"""What the watcher takes from confluent-kafka, checked against Kafka's own forms."""

from __future__ import annotations

from base64 import urlsafe_b64encode

from confluent_kafka import Uuid
from hypothesis import given
from hypothesis import strategies as st

from stickyd.service.watch.watcher import kafka_topic_id

LONGS = st.integers(-(2**63), 2**63 - 1)


@given(LONGS, LONGS)
def test_a_topic_id_is_printed_as_kafkas_java_uuid_prints_it(most: int, least: int) -> None:
    """Java's Uuid.toString(): the 16 bytes in URL-safe base64 without padding (the KIP-848 plug-in
    names topics so); confluent-kafka's str() uses the standard alphabet."""
    raw = most.to_bytes(8, "big", signed=True) + least.to_bytes(8, "big", signed=True)
    assert kafka_topic_id(Uuid(most, least)) == urlsafe_b64encode(raw).decode().rstrip("=")
