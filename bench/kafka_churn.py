"""Consumer-group churn on a real Apache Kafka 4.3 broker with the KIP-848 consumer protocol: the
server-side assignors `stickyd` (the plug-in, asking a real `stickyd serve`), `uniform` and `range`
through one scripted sequence (join, join, leave, join, partitions added) on one topic, reporting
partitions moved per step and seconds until the coordinator and every member agree on a stable
assignment. Needs `mvn -f plugins/kafka/pom.xml package`.

    python -m bench.kafka_churn
"""

from __future__ import annotations

import time

from confluent_kafka.admin import AdminClient, NewPartitions, NewTopic

from bench.results import machine_line, write_section
from cli.child_service import running_service
from tests.kafka.apache_kafka import apache_kafka_broker, stickyd_broker_properties
from tests.kafka.consumer_protocol import TP, Member, settle
from tests.kafka.switchboard import Switchboard

START = 12
GROWN = 18
STEPS = ["join", "join", "leave", "join", "partitions added"]


def churn(bootstrap: str, admin: AdminClient, assignor: str) -> list[tuple[str, int, float]]:
    topic = f"churn-{assignor}"
    admin.create_topics([NewTopic(topic, num_partitions=START, replication_factor=1)])[topic].result(timeout=30)
    count = START

    def partitions() -> set[TP]:
        return {(topic, p) for p in range(count)}

    def everyone_has_some(now: dict[str, frozenset[TP]]) -> bool:
        return all(now.values())

    members = [Member(bootstrap, topic, f"m{i}", [topic], assignor) for i in range(2)]
    settle(members, partitions(), admin, topic, everyone_has_some, timeout_s=60)
    results = []
    try:
        for i, step in enumerate(STEPS):
            before = {m.name: m.owned for m in members}
            started = time.monotonic()
            if step == "join":
                members.append(Member(bootstrap, topic, f"j{i}", [topic], assignor))
            elif step == "leave":
                members.pop(0).leave()
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
        "Consumer-group churn on Apache Kafka 4.3 (KIP-848 consumer protocol)",
        "\n".join(
            [
                machine_line(),
                "",
                "One KRaft broker on 127.0.0.1 (tests/kafka/apache_kafka.py: heartbeat 1 s, stickyd.timeout.ms 500),",
                f"confluent-kafka members (group.protocol=consumer); one topic, {START} partitions, {GROWN} after",
                "`partitions added`; two members at the start. `moved`: partitions taken from a member still in the",
                "group; seconds: from the event until the coordinator's description and every member agree, all",
                f"partitions owned, every member owning some, quiet 0.6 s. stickyd outages logged: {fallbacks}.",
                "",
                header,
                *rows,
            ]
        ),
    )


if __name__ == "__main__":
    main()
