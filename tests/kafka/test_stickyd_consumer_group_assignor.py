"""The KIP-848 server-side assignor `stickyd` inside a real Apache Kafka broker's group coordinator,
with a real `stickyd serve` behind it: consumers on the new protocol (confluent-kafka,
group.protocol=consumer, group.remote.assignor=stickyd) settle on the optimum of the contract,
checked against the independent CP-SAT reference (tests/solvers/consumer/reference.py), through
joins, leaves and added partitions; a group choosing `stickyd-load` is assigned by stickyd balancing
by load; and when stickyd is gone or black-holed the group still rebalances (Kafka's uniform
assignor in-process) while heartbeats keep flowing."""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx
import msgspec
import pytest
from confluent_kafka.admin import AdminClient, NewPartitions, NewTopic

from stickyd.cli.child_service import ServiceProcess
from stickyd.models.consumer.compact import MAGIC, is_compact
from tests.kafka.apache_kafka import STICKYD_TIMEOUT_MS, ApacheKafka
from tests.kafka.consumer_protocol import TP, Feeder, Member, settle, wait_consumed
from tests.kafka.switchboard import Switchboard
from tests.service_metrics import requests_to
from tests.solvers.consumer.reference import reference_objective

Assignment = dict[str, frozenset[TP]]


@pytest.fixture(scope="module")
def admin(apache_kafka: ApacheKafka) -> AdminClient:
    return AdminClient({"bootstrap.servers": apache_kafka.bootstrap})


def create_topics(admin: AdminClient, counts: dict[str, int]) -> None:
    futures = admin.create_topics([NewTopic(t, num_partitions=n, replication_factor=1) for t, n in counts.items()])
    for future in futures.values():
        future.result(timeout=30)


@pytest.fixture
def stickyd_answers(stickyd_switchboard: Switchboard, service: ServiceProcess) -> Iterator[ServiceProcess]:
    """stickyd reachable through the switchboard, its solver workers warmed by one request."""
    warm = {"topics": {"t": 2}, "members": [{"id": "a", "topics": ["t"]}]}
    httpx.post(f"{service.url}/v1/assign/consumer", json=warm, timeout=30).raise_for_status()
    stickyd_switchboard.forward(service.url)
    yield service
    stickyd_switchboard.reset()


def partitions_of(counts: dict[str, int]) -> set[TP]:
    return {(t, p) for t, n in counts.items() for p in range(n)}


def reference(previous: Assignment, subscriptions: dict[str, list[str]], counts: dict[str, int]) -> dict[str, int]:
    """The contract's optimum for this step: the members now in the group, owning what they owned."""
    members = []
    for name, topics in subscriptions.items():
        owned: dict[str, list[int]] = {}
        for topic, partition in sorted(previous.get(name, frozenset())):
            owned.setdefault(topic, []).append(partition)
        members.append({"id": name, "topics": topics, "owned": owned})
    return reference_objective({"topics": counts, "members": members})


def figures(previous: Assignment, now: Assignment) -> dict[str, int]:
    """Sum of squared loads, and moves: partitions a member still in the group owned before and
    another member owns now."""
    owner = {tp: name for name, owned in now.items() for tp in owned}
    moves = sum(1 for name, owned in previous.items() if name in now for tp in owned if owner.get(tp) != name)
    return {"squares": sum(len(owned) ** 2 for owned in now.values()), "moves": moves}


def optimal(
    previous: Assignment, subscriptions: dict[str, list[str]], counts: dict[str, int]
) -> Callable[[Assignment], bool]:
    """The state to wait for: the contract's optimum (balance, then fewest moves) from `previous`,
    by the independent reference. A group that never reaches it fails the test by timeout."""
    best = reference(previous, subscriptions, counts)
    return lambda now: (
        set(now) == set(subscriptions)
        and figures(previous, now)
        == {
            "squares": best["squares"],
            "moves": best["moves"],
        }
    )


def loads(expected: list[int]) -> Callable[[Assignment], bool]:
    return lambda now: sorted(len(owned) for owned in now.values()) == expected


def test_equal_subscriptions_stay_optimal_through_join_leave_and_partitions_added(
    apache_kafka: ApacheKafka, admin: AdminClient, stickyd_answers: ServiceProcess
) -> None:
    """Each settled step is the contract's optimum (balance, then fewest moves); a leave moves nobody
    else; added partitions are spread without moving old ones; no partition ever has two owners; the
    coordinator asked stickyd; every record produced around the rebalances is consumed."""
    counts = {"kip848-equal": 7}
    create_topics(admin, counts)
    asked_before = requests_to(stickyd_answers, "/v1/assign/consumer")
    feeder = Feeder(apache_kafka.bootstrap, sorted(partitions_of(counts)))
    members = [Member(apache_kafka.bootstrap, "kip848-equal", f"m{i}", ["kip848-equal"]) for i in range(2)]
    everyone = list(members)
    subscriptions = {m.name: m.topics for m in members}
    overlaps: list[str] = []
    try:
        first, seen = settle(members, partitions_of(counts), admin, "kip848-equal", optimal({}, subscriptions, counts))
        overlaps += seen
        assert "uniform assignor until" not in apache_kafka.log_text(), "stickyd did not answer in time"

        joiner = Member(apache_kafka.bootstrap, "kip848-equal", "m2", ["kip848-equal"])
        members.append(joiner)
        everyone.append(joiner)
        subscriptions["m2"] = joiner.topics
        joined, seen = settle(
            members, partitions_of(counts), admin, "kip848-equal", optimal(first, subscriptions, counts)
        )
        overlaps += seen

        leaver = members.pop(0)
        leaver.leave()
        del subscriptions[leaver.name]
        left, seen = settle(
            members, partitions_of(counts), admin, "kip848-equal", optimal(joined, subscriptions, counts)
        )
        overlaps += seen
        for member in members:
            assert joined[member.name] <= left[member.name], "a leave moved a partition of a member that stayed"

        before_growth = dict(counts)
        admin.create_partitions([NewPartitions("kip848-equal", 12)])["kip848-equal"].result(timeout=30)
        counts["kip848-equal"] = 12
        feeder.add_partitions(sorted(partitions_of(counts) - partitions_of(before_growth)))
        grown, seen = settle(
            members, partitions_of(counts), admin, "kip848-equal", optimal(left, subscriptions, counts)
        )
        overlaps += seen
        for member in members:
            assert left[member.name] <= grown[member.name], "adding partitions moved an old partition"
    finally:
        feeder.stop()
        missing = wait_consumed(everyone, feeder.produced)
        for member in members:
            member.leave()
    assert overlaps == []
    assert requests_to(stickyd_answers, "/v1/assign/consumer") >= asked_before + 4
    assert "uniform assignor until" not in apache_kafka.log_text()
    assert feeder.produced and missing == set()


def test_unequal_subscriptions_settle_on_the_balanced_optimum(
    apache_kafka: ApacheKafka, admin: AdminClient, stickyd_answers: ServiceProcess
) -> None:
    """Members subscribing to different topics (where Kafka's uniform assignor is only "almost
    balanced") get the most even loads the subscriptions allow, then the fewest moves on a join."""
    counts = {"kip848-wide": 6, "kip848-narrow": 3}
    create_topics(admin, counts)
    subscriptions = {"w0": ["kip848-wide", "kip848-narrow"], "w1": ["kip848-wide"], "n0": ["kip848-narrow"]}
    members = [Member(apache_kafka.bootstrap, "kip848-unequal", name, topics) for name, topics in subscriptions.items()]
    try:
        first, overlaps = settle(
            members, partitions_of(counts), admin, "kip848-unequal", optimal({}, subscriptions, counts)
        )
        members.append(Member(apache_kafka.bootstrap, "kip848-unequal", "n1", ["kip848-narrow"]))
        subscriptions["n1"] = ["kip848-narrow"]
        joined, seen = settle(
            members, partitions_of(counts), admin, "kip848-unequal", optimal(first, subscriptions, counts)
        )
    finally:
        for member in members:
            member.leave()
    assert overlaps + seen == []


def new_log_lines(broker: ApacheKafka, since: int, pattern: str) -> list[str]:
    return [line for line in broker.log_text()[since:].splitlines() if re.search(pattern, line)]


def test_stickyd_gone_the_group_rebalances_with_uniform_and_the_outage_is_logged_once(
    apache_kafka: ApacheKafka, admin: AdminClient, stickyd_switchboard: Switchboard, service: ServiceProcess
) -> None:
    """With every connection to stickyd reset, joins still settle on a balanced assignment made by
    Kafka's uniform assignor; the outage is logged once however many rebalances fall back, and once
    more when stickyd answers again, with the count of fallbacks."""
    counts = {"kip848-gone": 6}
    create_topics(admin, counts)
    stickyd_switchboard.forward(service.url)
    members = [Member(apache_kafka.bootstrap, "kip848-gone", "g0", ["kip848-gone"])]
    try:
        settle(members, partitions_of(counts), admin, "kip848-gone", loads([6]))  # stickyd answering: no outage now
        log_start = len(apache_kafka.log_text())
        stickyd_switchboard.reset()
        for name in ("g1", "g2"):
            members.append(Member(apache_kafka.bootstrap, "kip848-gone", name, ["kip848-gone"]))
            settled, overlaps = settle(
                members, partitions_of(counts), admin, "kip848-gone", loads([6 // len(members)] * len(members))
            )
            assert overlaps == []
        stickyd_switchboard.forward(service.url)
        members.pop().leave()
        settle(members, partitions_of(counts), admin, "kip848-gone", loads([3, 3]))
    finally:
        for member in members:
            member.leave()
        stickyd_switchboard.reset()
    assert len(new_log_lines(apache_kafka, log_start, r"WARN stickyd at .* failed")) == 1
    recovered = new_log_lines(
        apache_kafka, log_start, r"answers again; \d+ assignments were made by the uniform fallback"
    )
    assert len(recovered) == 1


def test_black_holed_stickyd_keeps_heartbeats_flowing_and_records_flowing(
    apache_kafka: ApacheKafka, admin: AdminClient, stickyd_switchboard: Switchboard
) -> None:
    """stickyd accepts connections and never answers: the plug-in gives up after stickyd.timeout.ms and
    assigns with uniform, so a join still settles; heartbeat round trips, measured by the members'
    clients on their coordinator connection, wait at most about the deadline (they do wait for it,
    offloading or not), far under the session timeout, so no member is lost; every record produced
    is consumed."""
    counts = {"kip848-hole": 6}
    create_topics(admin, counts)
    stickyd_switchboard.black_hole()
    feeder = Feeder(apache_kafka.bootstrap, sorted(partitions_of(counts)))
    members = [Member(apache_kafka.bootstrap, "kip848-hole", f"h{i}", ["kip848-hole"]) for i in range(2)]
    try:
        settle(members, partitions_of(counts), admin, "kip848-hole", loads([3, 3]))
        started = time.monotonic()
        members.append(Member(apache_kafka.bootstrap, "kip848-hole", "h2", ["kip848-hole"]))
        settled, overlaps = settle(members, partitions_of(counts), admin, "kip848-hole", loads([2, 2, 2]))
        join_s = time.monotonic() - started
    finally:
        stickyd_switchboard.reset()
        feeder.stop()
        missing = wait_consumed(members, feeder.produced)
        for member in members:
            member.leave()
    rtt_ms = max(max(m.coordinator_rtt_max_us, default=0) for m in members) / 1000
    print(f"black-holed stickyd: join settled in {join_s:.1f} s, coordinator round trip max {rtt_ms:.0f} ms")
    assert overlaps == []
    assert sorted(len(owned) for owned in settled.values()) == [2, 2, 2]
    assert 0 < rtt_ms < STICKYD_TIMEOUT_MS + 1500
    assert join_s < STICKYD_TIMEOUT_MS / 1000 + 20
    assert feeder.produced and missing == set()


@dataclass
class Recorded:
    """The relay's address, and each consumer request it forwarded with the status stickyd answered and
    the seconds it took."""

    url: str
    seen: list[tuple[dict[str, Any], int, float]] = field(default_factory=list)


def _request_of(body: bytes) -> dict[str, Any]:
    """A request the plug-in sent, JSON or compact (its options and top-level fields as sent)."""
    if is_compact(body):
        return dict(msgspec.msgpack.decode(body[len(MAGIC) :]))
    return dict(json.loads(body))


@contextmanager
def recording_relay(upstream: str) -> Iterator[Recorded]:
    """A loopback HTTP relay in front of stickyd that keeps every consumer request it forwards: what
    the broker's plug-in asked, word for word."""
    seen: list[tuple[dict[str, Any], int, float]] = []

    class Relay(BaseHTTPRequestHandler):
        def _relay(self, body: bytes | None) -> None:
            headers = {k: v for k, v in self.headers.items() if k.lower() in ("content-type", "authorization")}
            started = time.monotonic()
            answer = httpx.request(self.command, f"{upstream}{self.path}", content=body, headers=headers, timeout=30)
            if self.path == "/v1/assign/consumer" and body is not None:
                seen.append((_request_of(body), answer.status_code, time.monotonic() - started))
            self.send_response(answer.status_code)
            self.send_header("Content-Type", answer.headers.get("content-type", "application/json"))
            self.send_header("Content-Length", str(len(answer.content)))
            self.end_headers()
            self.wfile.write(answer.content)

        def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
            self._relay(None)

        def do_POST(self) -> None:  # noqa: N802
            self._relay(self.rfile.read(int(self.headers.get("Content-Length", "0"))))

        def log_message(self, format: str, *args: object) -> None:  # noqa: A002
            return

    server = ThreadingHTTPServer(("127.0.0.1", 0), Relay)
    thread = threading.Thread(target=server.serve_forever, name="recording-relay", daemon=True)
    thread.start()
    try:
        yield Recorded(f"http://127.0.0.1:{server.server_address[1]}", seen)
    finally:
        server.shutdown()
        server.server_close()


def test_a_group_choosing_stickyd_load_is_assigned_by_stickyd_balancing_by_load(
    apache_kafka: ApacheKafka, admin: AdminClient, stickyd_switchboard: Switchboard, stickyd_answers: ServiceProcess
) -> None:
    """Members with group.remote.assignor=stickyd-load: the coordinator runs the second assignor, whose
    requests ask for balance load with the broker's stickyd.load.tolerance and no partition weights
    (all partitions weigh the same); stickyd answers every one well within the plug-in's deadline, the
    group settles balanced, and no fallback starts an outage. (An outage left by an earlier test ends
    with this test's first answer: its "answers again" line is expected.)"""
    counts = {"kip848-load": 6}
    create_topics(admin, counts)
    log_start = len(apache_kafka.log_text())
    with recording_relay(stickyd_answers.url) as relay:
        stickyd_switchboard.forward(relay.url)
        members = [
            Member(apache_kafka.bootstrap, "kip848-load", f"l{i}", ["kip848-load"], assignor="stickyd-load")
            for i in range(3)
        ]
        try:
            settled, overlaps = settle(members, partitions_of(counts), admin, "kip848-load", loads([2, 2, 2]))
            described = admin.describe_consumer_groups(["kip848-load"])["kip848-load"].result(timeout=10)
        finally:
            for member in members:
                member.leave()
            stickyd_switchboard.forward(stickyd_answers.url)
    assert overlaps == []
    assert described.partition_assignor == "stickyd-load"
    assert relay.seen, "the coordinator did not ask stickyd"
    for request, status, seconds in relay.seen:
        assert request["options"]["balance"] == "load"
        assert request["options"]["load_tolerance"] == 0.1
        assert "partition_weights" not in request
        assert status == 200
        assert seconds < STICKYD_TIMEOUT_MS / 2000, "answered too late for the plug-in: it fell back"
    assert new_log_lines(apache_kafka, log_start, r"WARN stickyd at .* failed") == []
