"""Consumer-group churn on a real Apache Kafka broker (the release plugins/kafka builds against) with
the KIP-848 consumer protocol: the server-side assignors `stickyd` (the plug-in, asking a real
`stickyd serve`), `uniform` and `range` through one scripted sequence (join, join, leave, kill, join,
partitions added) on one topic, reporting partitions moved per step and seconds until the
coordinator and every member agree on a stable assignment. The member that is killed (SIGKILL: no
leave) runs in its own process (`tests.kafka.consumer_process`); it joined at the second step. Needs
`mvn -f plugins/kafka/pom.xml package`.

    python -m bench.broker.kip848_churn
"""

from __future__ import annotations

import time

from confluent_kafka.admin import AdminClient, NewPartitions, NewTopic

from bench.results import write_section
from stickyd.cli.child_service import running_service
from tests.kafka.apache_kafka import apache_kafka_broker, stickyd_broker_properties
from tests.kafka.consumer_process import MemberProcess
from tests.kafka.consumer_protocol import TP, Member, settle
from tests.kafka.jvm import kafka_version
from tests.kafka.switchboard import Switchboard

START = 12
GROWN = 18
STEPS = ["join", "join", "leave", "kill", "join", "partitions added"]
KILLED = 1
"""The member joining at this step is the one killed later."""


def churn(bootstrap: str, admin: AdminClient, assignor: str) -> list[tuple[str, int, float]]:
    topic = f"churn-{assignor}"
    admin.create_topics([NewTopic(topic, num_partitions=START, replication_factor=1)])[topic].result(timeout=30)
    count = START

    def partitions() -> set[TP]:
        return {(topic, p) for p in range(count)}

    def everyone_has_some(now: dict[str, frozenset[TP]]) -> bool:
        return all(now.values())

    members: list[Member | MemberProcess] = [Member(bootstrap, topic, f"m{i}", [topic], assignor) for i in range(2)]
    settle(members, partitions(), admin, topic, everyone_has_some, timeout_s=60)
    results = []
    try:
        for i, step in enumerate(STEPS):
            before = {m.name: m.owned for m in members}
            started = time.monotonic()
            if step == "join":
                kind = MemberProcess if i == KILLED else Member
                members.append(kind(bootstrap, topic, f"j{i}", [topic], assignor))
            elif step == "leave":
                members.pop(0).leave()
            elif step == "kill":
                doomed = next(m for m in members if isinstance(m, MemberProcess))
                members.remove(doomed)
                doomed.kill()
            else:
                admin.create_partitions([NewPartitions(topic, GROWN)])[topic].result(timeout=30)
                count = GROWN
            now, _ = settle(members, partitions(), admin, topic, everyone_has_some, timeout_s=60)
            moved = sum(len(before[name] - owned) for name, owned in now.items() if name in before)
            results.append((step, moved, time.monotonic() - started))
    finally:
        for m in members:
            m.leave()
    return results


def main() -> None:
    header = "| assignor | " + " | ".join(STEPS) + " | total moved |\n|---|" + "---:|" * (len(STEPS) + 1)
    print(header, flush=True)
    rows = []
    board = Switchboard()
    try:
        with (
            running_service({"STICKYD_WORKERS": "1"}) as service,
            apache_kafka_broker(stickyd_broker_properties(board.url)) as broker,
        ):
            board.forward(service.url)
            admin = AdminClient({"bootstrap.servers": broker.bootstrap})
            for assignor in ["stickyd", "uniform", "range"]:
                steps = churn(broker.bootstrap, admin, assignor)
                cells = " | ".join(f"{moved} moved, {secs:.1f} s" for _, moved, secs in steps)
                line = f"| {assignor} | {cells} | {sum(m for _, m, _ in steps)} |"
                print(line, flush=True)
                rows.append(line)
            fallbacks = broker.log_text().count("uniform assignor until")
    finally:
        board.close()
    write_section(
        f"Consumer-group churn on Apache Kafka {kafka_version()} (KIP-848 consumer protocol)",
        "\n".join(
            [
                "One KRaft broker on 127.0.0.1 (tests/kafka/apache_kafka.py: heartbeat 1 s, stickyd.timeout.ms 500),",
                f"confluent-kafka members (group.protocol=consumer); one topic, {START} partitions, {GROWN} after",
                "`partitions added`; two members at the start. `moved`: partitions taken from a member still in the",
                "group; seconds: from the event until the coordinator's description and every member agree, all",
                "partitions owned, every member owning some, quiet 0.6 s. `kill`: SIGKILL of the member that",
                "joined second (its own process), noticed by the coordinator after the session timeout",
                f"(group.consumer.session.timeout.ms 6000). stickyd outages logged: {fallbacks}.",
                "",
                header,
                *rows,
            ]
        ),
    )


if __name__ == "__main__":
    main()
