"""StickydAssignor (kafka-python, classic rebalance protocol) on the session's real Apache Kafka
broker (`apache_kafka` fixture) with a real `stickyd serve`."""

from __future__ import annotations

import itertools
import signal
import subprocess
import sys
import threading
import time

import pytest
from kafka import KafkaAdminClient
from kafka.admin import NewPartitions, NewTopic

from stickyd.cli.child_service import ServiceProcess
from stickyd.client.assignor import CooperativeStickydAssignor, StickydAssignor
from tests.kafka.apache_kafka import ApacheKafka
from tests.kafka.harness import Member, balanced, produce, wait_until
from tests.kafka.switchboard import Switchboard

PARTITIONS = 12
_names = itertools.count()


@pytest.fixture(scope="module")
def broker(apache_kafka: ApacheKafka) -> str:
    return apache_kafka.bootstrap


@pytest.fixture
def topic(broker: str) -> str:
    name = f"orders-{next(_names)}"
    admin = KafkaAdminClient(bootstrap_servers=broker)
    admin.create_topics([NewTopic(name, PARTITIONS, 1)])
    admin.close()
    return name


def _group(broker: str, topic: str, url: str, count: int, cls: type = StickydAssignor) -> list[Member]:
    group = f"group-{topic}"
    return [Member(broker, topic, group, f"m{i}", cls(url=url)) for i in range(count)]


def _close(members: list[Member]) -> None:
    for m in members:
        m.leave()


def test_leave_kill_and_join_move_only_what_they_must(broker: str, topic: str, service: ServiceProcess) -> None:
    members = _group(broker, topic, service.url, 3)
    try:
        wait_until(lambda: balanced(members, PARTITIONS), what="4/4/4")
        assert sorted(len(m.owned()) for m in members) == [4, 4, 4]
        produce(broker, topic, [f"before-{i}" for i in range(120)])

        # one leaves: the other two keep all they had and split only the orphans
        before = {m.name: m.owned() for m in members}
        leaving = members.pop()
        leaving.leave()
        wait_until(lambda: balanced(members, PARTITIONS), what="6/6 after a leave")
        for m in members:
            assert before[m.name] <= m.owned()
        produce(broker, topic, [f"after-leave-{i}" for i in range(120)])

        # two join (four members): exactly the minimal number of partitions moves
        before = {m.name: m.owned() for m in members}
        members += [Member(broker, topic, f"group-{topic}", f"m{i}", StickydAssignor(url=service.url)) for i in (3, 4)]
        wait_until(lambda: balanced(members, PARTITIONS) and all(m.owned() for m in members), what="join")
        moved = sum(len(before[m.name] - m.owned()) for m in members if m.name in before)
        loads = sorted(len(m.owned()) for m in members)
        assert loads == [3, 3, 3, 3]
        # 6/6 -> 3/3/3/3: each old member gives up exactly 3, and nothing else moves
        assert moved == 6
        produce(broker, topic, [f"after-join-{i}" for i in range(120)])

        keys = {f"{p}-{i}" for p in ("before", "after-leave", "after-join") for i in range(120)}
        wait_until(
            lambda: keys <= set().union(*(m.consumed for m in members + [leaving])), what="every record consumed"
        )
        duplicates = sum(sum(m.consumed.values()) for m in members + [leaving]) - len(keys)
        assert duplicates >= 0  # at-least-once: duplicates are allowed (and reported by the sum)
    finally:
        _close(members)


def test_partitions_added_are_spread_without_moving_old_ones(broker: str, topic: str, service: ServiceProcess) -> None:
    """12 partitions grow to 18: the leader notices the new partitions in its metadata and rejoins
    (the classic protocol's only trigger for it); each member keeps its 6 and takes 3 new ones."""
    members = _group(broker, topic, service.url, 2)
    try:
        wait_until(lambda: balanced(members, PARTITIONS), what="6/6")
        before = {m.name: m.owned() for m in members}
        admin = KafkaAdminClient(bootstrap_servers=broker)
        admin.create_partitions({topic: NewPartitions(PARTITIONS + 6)})
        admin.close()
        wait_until(lambda: balanced(members, PARTITIONS + 6), what="9/9 after partitions were added")
        for m in members:
            assert before[m.name] <= m.owned()
            assert len(m.owned() - before[m.name]) == 3
            assert min(m.owned() - before[m.name]) >= PARTITIONS
    finally:
        _close(members)


def test_a_killed_member_is_replaced_after_the_session_timeout(
    broker: str, topic: str, service: ServiceProcess
) -> None:
    members = _group(broker, topic, service.url, 2)
    doomed = subprocess.Popen(
        [sys.executable, "-m", "tests.kafka.member_process", broker, topic, f"group-{topic}", service.url],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        wait_until(
            lambda: sum(len(m.owned()) for m in members) == 8 and all(len(m.owned()) == 4 for m in members),
            what="4/4/4 with the doomed member",
        )
        before = {m.name: m.owned() for m in members}
        doomed.send_signal(signal.SIGKILL)
        doomed.wait()
        wait_until(lambda: balanced(members, PARTITIONS), timeout_s=40, what="6/6 after SIGKILL")
        for m in members:
            assert before[m.name] <= m.owned()
    finally:
        if doomed.poll() is None:
            doomed.kill()
            doomed.wait()
        _close(members)


def test_cooperative_never_owns_a_partition_twice(broker: str, topic: str, service: ServiceProcess) -> None:
    members = _group(broker, topic, service.url, 2, CooperativeStickydAssignor)
    overlaps: list[int] = []
    stop = threading.Event()

    def sample() -> None:
        while not stop.is_set():
            owned = [m.owned() for m in list(members)]
            seen: frozenset[int] = frozenset()
            for o in owned:
                overlaps.extend(sorted(seen & o))
                seen |= o
            time.sleep(0.005)

    sampler = threading.Thread(target=sample)
    sampler.start()
    try:
        wait_until(lambda: balanced(members, PARTITIONS), what="6/6 cooperative")
        members.append(Member(broker, topic, f"group-{topic}", "m2", CooperativeStickydAssignor(url=service.url)))
        wait_until(
            lambda: balanced(members, PARTITIONS) and all(m.owned() for m in members),
            what="4/4/4 after the follow-up round",
        )
        newcomer_events = list(members[2].events)
    finally:
        stop.set()
        sampler.join()
        _close(members)
    assert overlaps == []
    # the newcomer was only ever handed partitions (in the follow-up round), never had one taken back
    assert newcomer_events and all(kind == "assigned" for _, kind, _ in newcomer_events)


def test_rebalance_completes_when_the_service_is_gone(broker: str, topic: str, service: ServiceProcess) -> None:
    """The members reach stickyd through a relay; with the relay resetting every connection (a
    stopped service) a third member's join still completes through the in-process fallback."""
    relay = Switchboard()
    relay.forward(service.url)
    members = _group(broker, topic, relay.url, 2)
    try:
        wait_until(lambda: balanced(members, PARTITIONS), what="6/6 with the service")
        relay.reset()
        members.append(Member(broker, topic, f"group-{topic}", "m2", StickydAssignor(url=relay.url)))
        wait_until(
            lambda: balanced(members, PARTITIONS) and all(m.owned() for m in members),
            what="4/4/4 through the in-process fallback",
        )
        assert sum(m.assignor.fallbacks for m in members) >= 1
    finally:
        _close(members)
        relay.close()


def test_a_group_balanced_by_load_isolates_the_hot_partition(broker: str, topic: str, service: ServiceProcess) -> None:
    """Weights from a callable (read by whichever member leads): partition 0 weighs as much as the
    other eleven together, so the best bottleneck puts it alone on one member."""
    weights = [11] + [1] * (PARTITIONS - 1)

    def assignor() -> StickydAssignor:
        return StickydAssignor(
            url=service.url, balance="load", load_tolerance=0, partition_weights=lambda: {topic: weights}
        )

    members = [Member(broker, topic, f"group-{topic}", f"m{i}", assignor()) for i in range(2)]
    try:
        wait_until(
            lambda: sorted(sorted(m.owned()) for m in members) == [[0], list(range(1, PARTITIONS))],
            what="partition 0 alone",
        )
        assert sum(m.assignor.fallbacks for m in members) == 0
    finally:
        _close(members)
