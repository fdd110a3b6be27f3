"""Consumer-group churn on a real Apache Kafka broker with the classic rebalance protocol: one
scripted sequence (join, join, leave, kill, join, partitions added) on one topic, for
StickydAssignor and kafka-python's Range, Sticky and CooperativeSticky assignors, reporting
partitions moved per rebalance and how long each rebalance took to settle.

    python -m bench.broker.classic_churn
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from typing import Any

from kafka import KafkaAdminClient
from kafka.admin import NewPartitions, NewTopic
from kafka.coordinator.assignors.cooperative_sticky import CooperativeStickyAssignor
from kafka.coordinator.assignors.range import RangePartitionAssignor
from kafka.coordinator.assignors.sticky.sticky_assignor import StickyPartitionAssignor

from bench.results import write_section
from stickyd.cli.child_service import running_service
from stickyd.client.assignor import StickydAssignor
from tests.kafka.apache_kafka import apache_kafka_broker
from tests.kafka.harness import Member
from tests.kafka.jvm import kafka_version

START = 12
GROWN = 18
STEPS = ["join", "join", "leave", "kill", "join", "partitions added"]


def _factory(name: str, url: str) -> Any:
    return {
        "stickyd": lambda: StickydAssignor(url=url),
        "range": RangePartitionAssignor,
        "sticky": StickyPartitionAssignor,
        "cooperative-sticky": CooperativeStickyAssignor,
    }[name]


def churn(bootstrap: str, url: str, name: str, topic: str) -> list[tuple[str, int, float]]:
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    admin.create_topics([NewTopic(topic, START, 1)])
    make = _factory(name, url)
    count = START
    group = f"churn-{topic}"
    members = [Member(bootstrap, topic, group, "m0", make())]
    doomed = subprocess.Popen(
        [sys.executable, "-m", "tests.kafka.member_process", bootstrap, topic, group, url, name],
        stdout=subprocess.DEVNULL,
    )
    _wait_for_doomed(members[0], START)
    _settle(members, time.monotonic())
    results = []
    try:
        for i, step in enumerate(STEPS):
            before = {m.name: m.owned() for m in members}
            started = time.monotonic()
            if step == "join":
                members.append(Member(bootstrap, topic, group, f"m{i + 1}", make()))
            elif step == "leave":
                members.pop(1).leave()
            elif step == "kill":
                doomed.send_signal(signal.SIGKILL)
                doomed.wait()
            else:
                admin.create_partitions({topic: NewPartitions(GROWN)})
                count = GROWN
            # once the process member is dead, the members here must own every partition
            settled = _settle(members, started, cover=count if doomed.poll() is not None else 0)
            moved = sum(len(before[m.name] - m.owned()) for m in members if m.name in before)
            results.append((step, moved, settled))
    finally:
        if doomed.poll() is None:
            doomed.kill()
            doomed.wait()
        for m in members:
            m.leave()
        admin.close()
    return results


def _wait_for_doomed(first: Member, count: int, limit_s: float = 60.0) -> None:
    """Wait until the member in its own process owns partitions too (the first member owns fewer
    than all), so the first `join` step does not also count that process's own join."""
    started = time.monotonic()
    while not 0 < len(first.owned()) < count:
        if time.monotonic() - started > limit_s:
            raise AssertionError("the member in its own process never joined")
        time.sleep(0.05)


def _settle(
    members: list[Member], started: float, cover: int = 0, quiet_s: float = 2.0, limit_s: float = 60.0
) -> float:
    """Seconds from `started` until ownership last changed, once it has been quiet for quiet_s,
    every member owns something, no partition is owned twice and (cover) all are owned."""
    last: list[frozenset[int]] | None = None
    changed = started
    while time.monotonic() - started < limit_s:
        owned = [m.owned() for m in members]
        if owned != last:
            last, changed = owned, time.monotonic()
        steady = time.monotonic() - changed >= quiet_s
        union = frozenset().union(*owned)
        if steady and all(owned) and sum(map(len, owned)) == len(union) and len(union) >= cover:
            return changed - started
        time.sleep(0.05)
    raise AssertionError("the group did not settle")


def main() -> None:
    rows = []
    header = "| assignor | " + " | ".join(STEPS) + " | total moved |\n|---|" + "---:|" * (len(STEPS) + 1)
    print(header, flush=True)
    with apache_kafka_broker() as broker, running_service({"STICKYD_WORKERS": "1"}) as service:
        bootstrap = broker.bootstrap
        for i, name in enumerate(["stickyd", "range", "sticky", "cooperative-sticky"]):
            steps = churn(bootstrap, service.url, name, f"churn-{i}")
            cells = " | ".join(f"{moved} moved, {secs:.1f} s" for _, moved, secs in steps)
            line = f"| {name} | {cells} | {sum(m for _, m, _ in steps)} |"
            print(line, flush=True)
            rows.append(line)
    write_section(
        "Consumer-group churn on a real broker",
        "\n".join(
            [
                f"Apache Kafka {kafka_version()} (one KRaft node on 127.0.0.1, classic protocol), "
                f"one topic of {START} partitions",
                f"({GROWN} after `partitions added`), kafka-python 3.x consumers with session_timeout_ms=2000 and",
                "poll(timeout_ms=5000) (README: kafka-python's leader and metadata rejoins). Start: two members",
                "(one of them in a process that `kill` SIGKILLs).",
                "`moved`: partitions taken from a member that is still in the group; seconds: from the event until",
                "ownership last changed (quiet for 2 s after; the kill includes the session timeout).",
                "",
                header,
                *rows,
            ]
        ),
    )


if __name__ == "__main__":
    main()
