"""A real Apache Kafka broker for tests: one KRaft node (combined broker + controller) started from the
jars that `mvn package` copies to plugins/kafka/target/kafka-libs/, with stickyd's plug-in jar on the
class path, on free loopback ports, storage formatted in a temporary folder.

`apache_kafka_broker(extra_properties)` starts one and stops it (and its process group) on exit; the
session-scoped `apache_kafka` fixture in tests/conftest.py shares one across the test run.
`stand_in_broker(broker, node_id, port)` registers a second broker id that hosts nothing, for
topics larger than one test broker can host."""

from __future__ import annotations

import subprocess
import tempfile
import time
import uuid
from base64 import urlsafe_b64encode
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from stickyd.cli.child_service import free_port
from tests.kafka.jvm import (
    APP_CLASSPATH,
    CLASSPATH,
    PLUGIN_JAR,
    java_command,
    jmx_remote_flags,
    kafka_jars_built,
    start_java,
    stop_java,
    write_log4j2,
)

READY_LINE = "Kafka Server started"

# Test-friendly defaults: one partition for internal topics, no initial rebalance delay, and the
# KIP-848 consumer group timings lowered (the broker's minimums) so rebalances settle in seconds.
TEST_PROPERTIES: dict[str, str] = {
    "offsets.topic.replication.factor": "1",
    "offsets.topic.num.partitions": "1",
    "transaction.state.log.replication.factor": "1",
    "transaction.state.log.min.isr": "1",
    "share.coordinator.state.topic.replication.factor": "1",
    "share.coordinator.state.topic.min.isr": "1",
    "group.initial.rebalance.delay.ms": "0",
    "group.min.session.timeout.ms": "1000",
    "group.consumer.heartbeat.interval.ms": "1000",
    "group.consumer.min.heartbeat.interval.ms": "500",
    "group.consumer.session.timeout.ms": "6000",
    "group.consumer.min.session.timeout.ms": "6000",
    "group.streams.heartbeat.interval.ms": "500",
    "group.streams.min.heartbeat.interval.ms": "500",
    "group.streams.session.timeout.ms": "6000",
    "group.streams.min.session.timeout.ms": "6000",
    "num.partitions": "1",
    "auto.create.topics.enable": "true",
    "log.flush.interval.messages": "1000000",
}

# Half the test broker's 1 s heartbeat interval. Measured: with a black-holed stickyd a heartbeat waits
# the whole deadline (offloading or not), and with a 2 s deadline over a 1 s interval a confluent-kafka
# member stopped reconciling (kept partitions the coordinator had revoked, for 40 s and more).
STICKYD_TIMEOUT_MS = 500


def stickyd_broker_properties(url: str, timeout_ms: int = STICKYD_TIMEOUT_MS) -> dict[str, str]:
    """The plug-in installed as an operator would (README), with test timings: `uniform` stays the
    default, `stickyd` and `stickyd-load` (balance by load, tolerance 0.1) are chosen by clients with
    group.remote.assignor=stickyd or stickyd-load. Kafka's default
    `group.consumer.assignor.offload.enable=true` stays; even so a heartbeat waits for the assignor's
    whole deadline when stickyd hangs (README), so the deadline bounds the coordinator's latency and
    must stay well under the heartbeat interval."""
    return {
        "group.consumer.assignors": (
            "uniform,range,io.stickyd.kafka.StickydConsumerGroupAssignor,io.stickyd.kafka.StickydLoadConsumerGroupAssignor"
        ),
        "stickyd.url": url,
        "stickyd.load.tolerance": "0.1",
        "stickyd.timeout.ms": str(timeout_ms),
        "group.consumer.assignment.interval.ms": "100",
    }


@dataclass(frozen=True)
class ApacheKafka:
    """A running broker: `bootstrap` is "127.0.0.1:PORT"; `log` is its log4j file (WARN and up, plus
    the server's start line and io.stickyd at INFO); `jmx` its JMX remote address, when it has one."""

    bootstrap: str
    pid: int
    log: Path
    properties: Mapping[str, str]
    jmx: str | None = None

    def log_text(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""


@contextmanager
def apache_kafka_broker(
    extra_properties: Mapping[str, str] | None = None,
    env: Mapping[str, str] | None = None,
    startup_s: float = 90.0,
    heap: str = "-Xmx512m",
    classpath: str = CLASSPATH,
    jmx_port: int | None = None,
) -> Iterator[ApacheKafka]:
    """Formats KRaft storage in a temporary folder, starts `kafka.Kafka` on free loopback ports with
    TEST_PROPERTIES plus `extra_properties` (which win), waits for the server's start line, and on exit
    stops the broker's whole process group (SIGTERM, then SIGKILL). `classpath`: Kafka's jars and the
    plug-in (another Kafka release's jars to run an older broker); `jmx_port`: JMX remote on that
    loopback port (`.jmx` then says "127.0.0.1:PORT")."""
    if not kafka_jars_built():
        raise RuntimeError(f"Kafka jars not built: run `mvn -q -B -f plugins/kafka/pom.xml package` ({PLUGIN_JAR})")
    with tempfile.TemporaryDirectory(prefix="apache-kafka-") as tmp:
        folder = Path(tmp)
        port, controller_port = free_port(), free_port()
        properties = {
            "process.roles": "broker,controller",
            "node.id": "1",
            "controller.quorum.voters": f"1@127.0.0.1:{controller_port}",
            "listeners": f"PLAINTEXT://127.0.0.1:{port},CONTROLLER://127.0.0.1:{controller_port}",
            "advertised.listeners": f"PLAINTEXT://127.0.0.1:{port}",
            "controller.listener.names": "CONTROLLER",
            "inter.broker.listener.name": "PLAINTEXT",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
            "log.dirs": str(folder / "data"),
            **TEST_PROPERTIES,
            **(extra_properties or {}),
        }
        config = folder / "server.properties"
        config.write_text("".join(f"{key}={value}\n" for key, value in properties.items()))
        log = folder / "server.log"
        log4j = write_log4j2(folder, log, {"raft": "kafka.server.KafkaRaftServer"})
        # a cluster id may start with "-": passed as --cluster-id=ID so that it is not read as an option
        cluster_id = urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        storage_tool = ["kafka.tools.StorageTool", "format", f"--cluster-id={cluster_id}", "-c", str(config)]
        formatted = subprocess.run(
            java_command(*storage_tool, classpath=classpath, heap=heap, log4j=log4j),
            capture_output=True,
            text=True,
            timeout=180,
        )
        if formatted.returncode != 0:
            raise RuntimeError(f"kafka-storage format failed: {formatted.stdout[-2000:]} {formatted.stderr[-2000:]}")
        stdout = folder / "stdout.log"
        child = start_java(
            java_command(
                "kafka.Kafka",
                str(config),
                classpath=classpath,
                heap=heap,
                log4j=log4j,
                jvm_flags=jmx_remote_flags(jmx_port) if jmx_port else (),
            ),
            stdout,
            env=env,
            own_group=True,
        )
        jmx = f"127.0.0.1:{jmx_port}" if jmx_port else None
        broker = ApacheKafka(bootstrap=f"127.0.0.1:{port}", pid=child.pid, log=log, properties=properties, jmx=jmx)
        try:
            _wait_started(broker, child, stdout, startup_s)
            yield broker
        finally:
            # SIGTERM to the broker's process group: a clean controlled shutdown
            stop_java(child, grace_s=15.0)


def _wait_started(broker: ApacheKafka, child: subprocess.Popen[bytes], stdout: Path, startup_s: float) -> None:
    deadline = time.monotonic() + startup_s
    while time.monotonic() < deadline:
        if child.poll() is not None:
            raise RuntimeError(
                f"Kafka exited with {child.returncode}: {stdout.read_text()[-2000:]} {broker.log_text()[-2000:]}"
            )
        if READY_LINE in broker.log_text():
            return
        time.sleep(0.1)
    raise RuntimeError(f"Kafka did not start within {startup_s:.0f} s: {broker.log_text()[-2000:]}")


@contextmanager
def stand_in_broker(broker: ApacheKafka, node_id: int, port: int) -> Iterator[int]:
    """A second broker id in `broker`'s cluster that hosts nothing (`io.stickyd.kafka.cluster.StandInBroker`
    from plugins/kafka's test classes): registered with the controller, heartbeating as caught up and
    unfenced, its listener on 127.0.0.1:`port` (whatever a test puts there). Topics whose replicas are
    placed on it by hand exist in the cluster's metadata, for the group coordinator to assign, with no
    log, file descriptor or memory map on this machine: a single test broker keeps every hosted
    partition's segment open and its indexes mapped, and cannot hold hundreds of thousands. Yields
    its process id once the controller has unfenced it; stopped on exit."""
    data = Path(broker.properties["log.dirs"])
    cluster_id = dict(
        line.split("=", 1) for line in (data / "meta.properties").read_text().splitlines() if "=" in line
    )["cluster.id"]
    controller = broker.properties["controller.quorum.voters"].split("@", 1)[1]
    stdout = broker.log.with_name(f"stand-in-{node_id}.log")
    command = java_command(
        "io.stickyd.kafka.cluster.StandInBroker",
        controller,
        cluster_id,
        str(node_id),
        str(port),
        classpath=APP_CLASSPATH,
        heap="-Xmx64m",
    )
    child = start_java(command, stdout)
    try:
        deadline = time.monotonic() + 60.0
        while "unfenced" not in stdout.read_text():
            if child.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"stand-in broker {node_id} not unfenced: {stdout.read_text()[-2000:]}")
            time.sleep(0.1)
        yield child.pid
    finally:
        stop_java(child, grace_s=5.0)
