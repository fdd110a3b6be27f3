"""The Kafka plug-ins' MBeans (`kafka.stickyd:*`), read with the JMX client in plugins/kafka's test
sources (`io.stickyd.kafka.jmx.JmxDump`, a subprocess printing JSON): from a broker started with JMX
remote (`apache_kafka_broker(jmx_port=...)`), or every plug-in's as a fresh JVM registers them.

    beans = read_mbeans("127.0.0.1:9999")
    beans[consumer_bean()]["request-total"]"""

from __future__ import annotations

import json
import subprocess

from tests.kafka.jvm import APP_CLASSPATH

MBeans = dict[str, dict[str, float | None]]


def consumer_bean(assignor: str = "stickyd", cause: str | None = None) -> str:
    """The MBean of the KIP-848 consumer assignor `assignor`, or its fallbacks for `cause`."""
    name = f"kafka.stickyd:type=assignor-metrics,assignor={assignor},group-type=consumer"
    return f"{name},cause={cause}" if cause else name


def streams_bean(assignor: str = "stickyd", cause: str | None = None) -> str:
    """The MBean of the KIP-1357 Streams group assignor, or its fallbacks for `cause`."""
    return consumer_bean(assignor, cause).replace("group-type=consumer", "group-type=streams")


def read_mbeans(address: str | None = None) -> MBeans:
    """MBean name -> attribute -> value (None for a statistic with no sample yet): the JVM at
    `address` ("HOST:PORT", JMX remote), else every plug-in's MBeans in a fresh JVM."""
    command = ["java", "-Xmx64m", "-XX:TieredStopAtLevel=1", "-cp", APP_CLASSPATH, "io.stickyd.kafka.jmx.JmxDump"]
    done = subprocess.run([*command, address or "--local"], capture_output=True, text=True, timeout=60, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"JmxDump failed ({done.returncode}): {done.stderr[-2000:]}")
    return {bean["name"]: bean["attributes"] for bean in json.loads(done.stdout)}
