"""Shared fixtures: the contract's examples and the one validity assertion every test uses."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from stickyd.cli.child_service import ServiceProcess, running_service
from stickyd.models import ConsumerProblem, ConsumerSolution, validate_consumer_solution
from tests.kafka.apache_kafka import ApacheKafka, apache_kafka_broker, stickyd_broker_properties
from tests.kafka.jvm import kafka_jars_built
from tests.kafka.switchboard import Switchboard
from tests.processes import MARK, new_mark, this_process, wait_until_none_marked
from tests.store.postgres_cluster import PostgresCluster, postgres_cluster

CONTRACT = Path(__file__).resolve().parents[1] / "service" / "examples"
EXPECTED_FILE = Path(__file__).resolve().parent / "expected.json"


def load_example(name: str) -> dict[str, Any]:
    return json.loads((CONTRACT / name).read_text())


def expected() -> dict[str, Any]:
    return json.loads(EXPECTED_FILE.read_text())


def assert_valid(problem: dict[str, Any] | ConsumerProblem, solution: ConsumerSolution) -> None:
    model = problem if isinstance(problem, ConsumerProblem) else ConsumerProblem.model_validate(problem)
    violations = validate_consumer_solution(model, solution)
    assert violations == [], violations


def loads_of(solution: ConsumerSolution) -> list[int]:
    assignment = solution.target if solution.target is not None else solution.assignment
    return sorted(sum(len(p) for p in parts.values()) for parts in assignment.values())


@pytest.fixture
def example():
    return load_example


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    """One real local SparkSession (pyspark + pyarrow + the machine's Java 17) for every test that
    needs Spark, whatever its folder: a JVM starts once per test run."""
    from stickyd.pipeline.spark import spark_session

    session = spark_session("local[2]", "stickyd-tests")
    yield session
    session.stop()


@pytest.fixture(scope="session")
def service() -> Iterator[ServiceProcess]:
    """A real `stickyd serve` on a free loopback port, stopped after the session."""
    with running_service({"STICKYD_WORKERS": "2", "STICKYD_MAX_PARTITIONS": "200000"}) as running:
        yield running


@pytest.fixture(scope="session")
def stickyd_switchboard() -> Iterator[Switchboard]:
    """The relay the session broker's `stickyd.url` points at; it starts in `reset` (stickyd gone).
    Tests that want stickyd to answer call `forward(service.url)`, and leave it as they found it."""
    board = Switchboard()
    try:
        yield board
    finally:
        board.close()


@pytest.fixture(scope="session")
def apache_kafka(stickyd_switchboard: Switchboard) -> Iterator[ApacheKafka]:
    """One real Apache Kafka 4.x broker (KRaft, single node) for the whole session, from the Maven jars
    in plugins/kafka/target; `.bootstrap` is "127.0.0.1:PORT". Kafka's `uniform` stays the default
    consumer-group assignor; `stickyd` (the plug-in) is there for clients that choose it, asking
    stickyd through `stickyd_switchboard`. For other broker properties start your own with
    `tests.kafka.apache_kafka.apache_kafka_broker(extra_properties)`."""
    if not kafka_jars_built():
        pytest.skip("Kafka jars not built: run `mvn -q -B -f plugins/kafka/pom.xml package` (scripts/test does)")
    with apache_kafka_broker(stickyd_broker_properties(stickyd_switchboard.url)) as broker:
        yield broker


@pytest.fixture(scope="session")
def postgres() -> Iterator[PostgresCluster]:
    """One private PostgreSQL server for the session (Debian's package: `initdb` into a temporary
    directory, `pg_ctl` on a free loopback port, trust authentication); `.create_database(name)`
    gives a fresh database's URL. Stopped and removed after the session."""
    with postgres_cluster() as cluster:
        yield cluster


# every process the test run starts inherits this mark, so that leftovers are found even after they
# were re-parented to PID 1 (a test may give its own children a mark of their own)
RUN_MARK = os.environ.setdefault(MARK, new_mark())


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """The suite leaves no process behind: after every fixture is torn down, no process started by
    the run (solver processes, services, brokers) is still alive."""
    left = wait_until_none_marked(RUN_MARK, 5.0, exclude=this_process() | _children())
    if left:
        lines = "\n".join(f"  {pid}: {cmd[:200]}" for pid, cmd in sorted(left.items()))
        print(f"\nprocesses left behind by the test run:\n{lines}")
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def _children() -> set[int]:
    """This process's own children (still owned by it; stopped when it exits)."""
    me = os.getpid()
    found: set[int] = set()
    for task in os.listdir(f"/proc/{me}/task"):
        try:
            with open(f"/proc/{me}/task/{task}/children") as children:
                found.update(int(pid) for pid in children.read().split())
        except OSError:
            continue
    return found
