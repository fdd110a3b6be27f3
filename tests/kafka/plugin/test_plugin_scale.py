"""The KIP-848 plug-in at scale, on the coordinator's own code path without a broker: a
200,000-partition group (500 members, Kafka's round-robin layout after a member left) assigned by
`StickydConsumerGroupAssignor.assign()` in a JVM (the benchmark harness, its group spec built as
the coordinator builds it) against a real `stickyd serve`, in the compact encoding, within
`stickyd.timeout.ms` and without the uniform fallback; the answer is complete, balanced and moves
no more than Kafka's UniformAssignor on the same group.

(A single test broker hosts about 19,000 partitions at most on the test machine, its open files and
memory maps being limited: tests/kafka/plugin/test_plugin_broker_scale.py assigns a 200,000-partition
group in a real broker whose partitions are placed on a stand-in broker that hosts no log.
tests/kafka/test_stickyd_consumer_group_assignor.py runs the same plug-in in a real broker.)"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from bench.layouts import kafka_like_problem, write_problem_json
from stickyd.cli.child_service import ServiceProcess
from tests.kafka.jvm import APP_CLASSPATH, kafka_jars_built

TIMEOUT_MS = 2_000
"""the plug-in's stickyd.timeout.ms (it asks for half as the solver's time limit)."""


@pytest.mark.skipif(not kafka_jars_built(), reason="Kafka jars not built (mvn package)")
def test_a_200k_partition_group_is_assigned_by_stickyd_within_the_plugins_deadline(
    service: ServiceProcess, tmp_path: Path
) -> None:
    problem = kafka_like_problem(200_000, 500, layout="roundrobin", shape="equal", event="leave")
    problem_file = write_problem_json(problem, tmp_path / "group.json")
    command = ["java", "-Xmx2g", "-XX:+UseSerialGC", "-cp", APP_CLASSPATH]
    command += ["io.stickyd.kafka.bench.ConsumerAssignorBench", str(problem_file), "uniform,stickyd-plugin", "1", "2"]
    env = {**os.environ, "STICKYD_URL": service.url, "STICKYD_TIMEOUT_MS": str(TIMEOUT_MS)}
    done = subprocess.run(command, capture_output=True, timeout=240, check=True, env=env)
    figures = json.loads(done.stdout)
    plugin, uniform = figures["stickyd-plugin"], figures["uniform"]
    assert plugin["fallbacks"] == 0, "the uniform fallback answered: stickyd missed the plug-in's deadline"
    assert plugin["time_ms"] < TIMEOUT_MS
    assert plugin["unassigned"] == plugin["duplicated"] == 0
    assert (plugin["min_load"], plugin["max_load"]) == (400, 400)
    assert plugin["moves"] <= uniform["moves"]
