"""Shared fixtures: the contract's examples and the one validity assertion every test uses."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cli.child_service import ServiceProcess, running_service
from models import ConsumerProblem, ConsumerSolution, validate_consumer_solution
from tests.kafka.apache_kafka import ApacheKafka, apache_kafka_broker, kafka_jars_built
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
def service() -> Iterator[ServiceProcess]:
    """A real `stickyd serve` on a free loopback port, stopped after the session."""
    with running_service({"STICKYD_WORKERS": "2", "STICKYD_MAX_PARTITIONS": "200000"}) as running:
        yield running


@pytest.fixture(scope="session")
def apache_kafka() -> Iterator[ApacheKafka]:
    """One real Apache Kafka 4.x broker (KRaft, single node) for the whole session, from the Maven jars
    in plugins/kafka/target; `.bootstrap` is "127.0.0.1:PORT". For extra broker properties start your
    own with `tests.kafka.apache_kafka.apache_kafka_broker(extra_properties)`."""
    if not kafka_jars_built():
        pytest.skip("Kafka jars not built: run `mvn -q -B -f plugins/kafka/pom.xml package` (scripts/test does)")
    with apache_kafka_broker() as broker:
        yield broker


@pytest.fixture(scope="session")
def postgres() -> Iterator[PostgresCluster]:
    """One private PostgreSQL server for the session (Debian's package: `initdb` into a temporary
    directory, `pg_ctl` on a free loopback port, trust authentication); `.create_database(name)`
    gives a fresh database's URL. Stopped and removed after the session."""
    with postgres_cluster() as cluster:
        yield cluster
