"""The contract's consumer problem from a classic-protocol JoinGroup round, shared by the
kafka-python (`stickyd.client.assignor`) and aiokafka (`stickyd.client.aiokafka_assignor`)
assignors: each member's user data carries what it owns and since which generation (KIP-341).

Plain values only (no Kafka client imported), so either client library works without the other.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from stickyd.client.load_settings import LoadSettings
from stickyd.models.consumer.weights import MAX_CAPACITY

log = logging.getLogger(__name__)

USER_DATA_VERSION = 1
NO_LOAD = LoadSettings()


def encode_user_data(
    owned: Mapping[str, Sequence[int]], generation: int, rack: str | None, capacity: int | None = None
) -> bytes:
    """The member's user data; `capacity` only when the member has one (balance `load`)."""
    data: dict[str, Any] = {"v": USER_DATA_VERSION, "owned": dict(owned), "generation": generation, "rack": rack}
    if capacity is not None:
        data["capacity"] = capacity
    return json.dumps(data).encode()


def decode_user_data(raw: bytes | None) -> dict[str, Any]:
    """What a member reported; anything unreadable counts as a fresh member."""
    if not raw:
        return {}
    try:
        data = json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        log.warning("ignoring unreadable stickyd user data")
        return {}
    return data if isinstance(data, dict) and data.get("v") == USER_DATA_VERSION else {}


def member_entry(
    member_id: str,
    topics: Iterable[str],
    user_data: bytes | None,
    owned_partitions: Mapping[str, Sequence[int]] | None = None,
) -> dict[str, Any]:
    """One contract member: its subscription, what its user data says it owns (else the
    subscription's own `owned_partitions`, KIP-429), its generation, rack and capacity when reported."""
    data = decode_user_data(user_data)
    owned = data.get("owned")
    if not isinstance(owned, dict):
        owned = {topic: list(partitions) for topic, partitions in (owned_partitions or {}).items()}
    entry: dict[str, Any] = {"id": member_id, "topics": sorted(topics), "owned": owned}
    if isinstance(data.get("generation"), int) and data["generation"] >= -1:
        entry["generation"] = data["generation"]
    if isinstance(data.get("rack"), str) and data["rack"]:
        entry["rack"] = data["rack"]
    capacity = data.get("capacity")
    if isinstance(capacity, int) and not isinstance(capacity, bool) and 1 <= capacity <= MAX_CAPACITY:
        entry["capacity"] = capacity
    return entry


def consumer_problem(
    members: Sequence[dict[str, Any]],
    partition_count: Callable[[str], int | None],
    options: dict[str, Any],
    load: LoadSettings = NO_LOAD,
) -> dict[str, Any]:
    """The contract problem: `members` from `member_entry`, partition counts of every subscribed
    topic the client's metadata knows (`partition_count` returns None for an unknown topic), and
    what `load` adds: `options.balance`, `options.load_tolerance`, this round's `partition_weights`."""
    topics: dict[str, int] = {}
    for member in members:
        for topic in member["topics"]:
            count = partition_count(topic)
            if count is not None:
                topics[topic] = count
    problem: dict[str, Any] = {"topics": topics, "members": list(members), "options": {**options, **load.options()}}
    weights = load.weights(topics)
    if weights is not None:
        problem["partition_weights"] = weights
    return problem


def sorted_parts(parts: Mapping[str, Sequence[int]]) -> list[tuple[str, list[int]]]:
    """A member's assignment as the consumer protocol lists it: (topic, partitions), sorted."""
    return sorted((topic, sorted(partitions)) for topic, partitions in parts.items())
