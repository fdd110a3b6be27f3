"""stickyd.client.aiokafka_assignor.StickydAssignor with real aiokafka consumers (classic protocol,
eager) on the session's Apache Kafka broker: the group settles through a real `stickyd serve`,
keeps what it can when a member leaves, balances by capacity when asked, and settles through the
in-process fallback when the service is down."""

from __future__ import annotations

import asyncio
import itertools
import time
from collections.abc import Callable, Coroutine
from typing import Any

from aiokafka import AIOKafkaConsumer
from aiokafka.admin import AIOKafkaAdminClient, NewTopic

from stickyd.cli.child_service import ServiceProcess, free_port
from stickyd.client.aiokafka_assignor import StickydAssignor
from tests.kafka.apache_kafka import ApacheKafka
from tests.service_metrics import requests_to

PARTITIONS = 6
_names = itertools.count()


class Member:
    """One aiokafka consumer in the group, fetching on its own task so that it keeps rebalancing."""

    def __init__(self, bootstrap: str, topic: str, group: str, url: str, **settings: Any) -> None:
        self.assignor = StickydAssignor(url=url, timeout_ms=2000, **settings)
        self.consumer = AIOKafkaConsumer(
            topic,
            bootstrap_servers=bootstrap,
            group_id=group,
            partition_assignment_strategy=[self.assignor],
            session_timeout_ms=6000,
            heartbeat_interval_ms=500,
            metadata_max_age_ms=1000,
            auto_offset_reset="earliest",
        )
        self.task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        await self.consumer.start()
        self.task = asyncio.create_task(self._fetch())

    async def _fetch(self) -> None:
        while True:
            await self.consumer.getmany(timeout_ms=200)

    def owned(self) -> set[int]:
        return {tp.partition for tp in self.consumer.assignment()}

    async def stop(self) -> None:
        if self.task is not None:
            self.task.cancel()
        await self.consumer.stop()


async def create_topic(bootstrap: str) -> str:
    name = f"aio-orders-{next(_names)}"
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        await admin.create_topics([NewTopic(name, PARTITIONS, 1)])
    finally:
        await admin.close()
    return name


async def settle(members: list[Member], loads: list[int], timeout_s: float = 60.0) -> None:
    """Until the members own every partition once, with these loads, for a second."""
    deadline = time.monotonic() + timeout_s
    since: float | None = None
    while time.monotonic() < deadline:
        owned = [m.owned() for m in members]
        whole = sorted(p for o in owned for p in o) == list(range(PARTITIONS))
        if whole and sorted(len(o) for o in owned) == loads:
            since = since or time.monotonic()
            if time.monotonic() - since >= 1.0:
                return
        else:
            since = None
        await asyncio.sleep(0.1)
    raise AssertionError(f"not settled on {loads} within {timeout_s:.0f} s: {[m.owned() for m in members]}")


def run(scenario: Callable[[], Coroutine[Any, Any, None]]) -> None:
    asyncio.run(asyncio.wait_for(scenario(), timeout=180))


def test_aiokafka_group_settles_through_stickyd_and_a_leave_moves_only_the_leavers_partitions(
    apache_kafka: ApacheKafka, service: ServiceProcess
) -> None:
    """Three consumers settle 2/2/2 on stickyd's answer (the service counts the requests, no
    fallback); one leaves: the other two keep what they had and split its two partitions."""

    async def scenario() -> None:
        topic = await create_topic(apache_kafka.bootstrap)
        before = requests_to(service, "/v1/assign/consumer")
        members = [Member(apache_kafka.bootstrap, topic, f"group-{topic}", service.url) for _ in range(3)]
        try:
            for member in members:
                await member.start()
            await settle(members, [2, 2, 2])
            assert requests_to(service, "/v1/assign/consumer") > before
            assert sum(m.assignor.fallbacks for m in members) == 0
            assert any(m.assignor.last_solution is not None for m in members)

            had = {id(m): m.owned() for m in members}
            leaving = members.pop()
            await leaving.stop()
            await settle(members, [3, 3])
            for member in members:
                assert had[id(member)] <= member.owned(), (had[id(member)], member.owned())
            assert sum(m.assignor.fallbacks for m in members) == 0
        finally:
            for member in members:
                await member.stop()

    run(scenario)


def test_aiokafka_group_balances_by_capacity_through_stickyd(
    apache_kafka: ApacheKafka, service: ServiceProcess
) -> None:
    """Balance `load` with no weights: the member of capacity 2 (carried in its user data) takes
    twice the partitions of the member of capacity 1, on the service's answer."""

    async def scenario() -> None:
        topic = await create_topic(apache_kafka.bootstrap)
        group = f"group-{topic}"
        members = [
            Member(apache_kafka.bootstrap, topic, group, service.url, balance="load", capacity=capacity)
            for capacity in (2, 1)
        ]
        try:
            for member in members:
                await member.start()
            await settle(members, [2, 4])
            assert len(members[0].owned()) == 4
            assert sum(m.assignor.fallbacks for m in members) == 0
            solution = next(m.assignor.last_solution for m in members if m.assignor.last_solution is not None)
            assert solution.stats.load is not None
        finally:
            for member in members:
                await member.stop()

    run(scenario)


def test_aiokafka_group_settles_through_the_fallback_when_stickyd_is_down(apache_kafka: ApacheKafka) -> None:
    """Nothing listens at the assignor's URL: the leader assigns in-process and counts it."""

    async def scenario() -> None:
        topic = await create_topic(apache_kafka.bootstrap)
        url = f"http://127.0.0.1:{free_port()}"
        members = [Member(apache_kafka.bootstrap, topic, f"group-{topic}", url) for _ in range(2)]
        try:
            for member in members:
                await member.start()
            await settle(members, [3, 3])
            assert sum(m.assignor.fallbacks for m in members) >= 1
        finally:
            for member in members:
                await member.stop()

    run(scenario)
