"""Size limits by cost, against a real `stickyd serve` with the shipped limits: what a request will
cost (tasks x replicas, subtopologies x clients, member x topic subscriptions) is checked after
parsing and before any model is built or solved, and a request over a limit gets 413 naming the
field and the setting, within a second, with the service healthy afterwards. Two small Streams
bodies of very costly requests (175 KB: 2M tasks with 2 standbys; 723 KB: 20k subtopologies) are among them."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import httpx
import hypothesis
import msgspec
import pytest
from hypothesis import strategies as st

from stickyd.cli.child_service import ServiceProcess, running_service
from stickyd.models.consumer.compact import MAGIC, decode_compact
from stickyd.service.admission.request_cost import RequestCost, compact_request_cost, over_limits, request_cost
from stickyd.service.processes.solve_job import Limits
from stickyd.service.settings import Settings

JSON = {"content-type": "application/json"}
SUBSCRIPTIONS_LIMIT = 5_000


@pytest.fixture(scope="module")
def limited() -> Iterator[ServiceProcess]:
    """The shipped limits, except a small STICKYD_MAX_SUBSCRIPTIONS so its body stays small."""
    with running_service({"STICKYD_WORKERS": "1", "STICKYD_MAX_SUBSCRIPTIONS": str(SUBSCRIPTIONS_LIMIT)}) as running:
        yield running


def _clients(n: int) -> list[dict[str, Any]]:
    return [{"id": f"streams-{j:05d}"} for j in range(n)]


def streams_2m_tasks_2_standbys() -> dict[str, Any]:
    """About 175 KB: 1,000 subtopologies of 2,000 partitions (2M tasks), 6,000 clients, 2 standbys."""
    subtopologies = [{"id": str(i), "partitions": 2_000} for i in range(1_000)]
    return {"subtopologies": subtopologies, "clients": _clients(6_000), "config": {"num_standby_replicas": 2}}


def streams_20k_subtopologies() -> dict[str, Any]:
    """About 723 KB: 20,000 subtopologies of 4 partitions (80k tasks), 2,000 clients, no standbys."""
    subtopologies = [{"id": f"sub-{i:05d}", "partitions": 4} for i in range(20_000)]
    return {"subtopologies": subtopologies, "clients": _clients(2_000)}


def _post(service: ServiceProcess, kind: str, problem: dict[str, Any]) -> tuple[httpx.Response, float, int]:
    body = json.dumps(problem).encode()
    started = time.monotonic()
    response = httpx.post(f"{service.url}/v1/assign/{kind}", content=body, headers=JSON, timeout=60)
    return response, time.monotonic() - started, len(body)


@pytest.mark.parametrize(
    ("kind", "problem", "field", "setting", "body_kb"),
    [
        ("streams", streams_2m_tasks_2_standbys(), "subtopologies", "STICKYD_MAX_TASK_REPLICAS", (150, 200)),
        ("streams", streams_20k_subtopologies(), "subtopologies", "STICKYD_MAX_SUBTOPOLOGY_CLIENTS", (650, 800)),
        (
            "streams",
            {"subtopologies": [{"id": "0", "partitions": 2_500_000}], "clients": _clients(2)},
            "subtopologies",
            "STICKYD_MAX_PARTITIONS",
            (0, 1),
        ),
        (
            "streams",
            {"subtopologies": [{"id": "0", "partitions": 1}], "clients": _clients(20_001)},
            "clients",
            "STICKYD_MAX_MEMBERS",
            (0, 600),
        ),
        (
            "consumer",
            {
                "topics": {f"t{i}": 1 for i in range(100)},
                "members": [{"id": f"m{j}", "topics": [f"t{i}" for i in range(100)]} for j in range(51)],
            },
            "members",
            "STICKYD_MAX_SUBSCRIPTIONS",
            (0, 100),
        ),
    ],
    ids=[
        "streams-175KB-2M-tasks-2-standbys",
        "streams-723KB-20k-subtopologies",
        "streams-tasks",
        "streams-clients",
        "consumer-subscriptions",
    ],
)
def test_a_request_over_a_cost_limit_gets_413_naming_the_field_and_the_setting_before_solving(
    limited: ServiceProcess, kind: str, problem: dict[str, Any], field: str, setting: str, body_kb: tuple[int, int]
) -> None:
    response, elapsed, size = _post(limited, kind, problem)
    assert body_kb[0] <= size // 1024 <= body_kb[1], size
    assert response.status_code == 413, response.text[:300]
    answer = response.json()
    assert answer["field"] == field and answer["detail"].startswith(f"{field}: ")
    assert setting in answer["detail"]
    assert elapsed < 5.0, f"413 after {elapsed:.1f} s: the limit must be checked before solving"


def test_just_under_the_limits_is_solved_and_the_service_stays_healthy(limited: ServiceProcess) -> None:
    """A problem at exactly the subscription limit is answered (the limit is inclusive)."""
    members = [{"id": f"m{j}", "topics": [f"t{i}" for i in range(100)]} for j in range(SUBSCRIPTIONS_LIMIT // 100)]
    response, _, _ = _post(limited, "consumer", {"topics": {f"t{i}": 2 for i in range(100)}, "members": members})
    assert response.status_code == 200, response.text[:300]
    health = httpx.get(f"{limited.url}/v1/health", timeout=10).json()
    assert health["ready"] and health["restarts"] == 0
    assert " ERROR " not in limited.log_text()


def test_costs_are_read_from_the_body_without_trusting_its_shape() -> None:
    """Wrong types count as nothing (the model's validation names them later), booleans are not
    counts, standbys count only for stateful tasks and only as many as other clients exist."""
    odd = request_cost("streams", {"subtopologies": [{"partitions": True}, 7, {"partitions": "9"}], "clients": 3})
    assert odd == RequestCost(0, 0, task_replicas=0, subtopology_clients=0)
    cost = request_cost(
        "streams",
        {
            "subtopologies": [{"id": "0", "partitions": 10}, {"id": "1", "partitions": 5, "stateful": False}],
            "clients": [{"id": "a"}, {"id": "b"}],
            "config": {"num_standby_replicas": 3},
        },
    )
    assert cost == RequestCost(15, 2, task_replicas=15 + 10 * 1, subtopology_clients=4)
    consumer = request_cost("consumer", {"topics": {"a": 3, "b": -1}, "members": [{"topics": ["a", "b"]}, "x"]})
    assert consumer == RequestCost(3, 2, subscriptions=2)


@hypothesis.settings(max_examples=100, deadline=None)
@hypothesis.given(st.lists(st.integers(0, 50), min_size=1, max_size=5), st.data())
def test_a_compact_bodys_costs_are_those_of_its_dict(partitions: list[int], data: st.DataObject) -> None:
    """Read from the subscription table (one entry per distinct subscription), the costs are what
    the contract's dict of the same body counts member by member."""
    topics = [[f"t{i}", count] for i, count in enumerate(partitions)]
    index = st.integers(0, len(topics) - 1)
    subscriptions = data.draw(st.lists(st.lists(index, max_size=len(topics), unique=True), min_size=1, max_size=4))
    chosen = data.draw(st.lists(st.integers(0, len(subscriptions) - 1), min_size=1, max_size=30))
    members = [[f"m{i}", s] for i, s in enumerate(chosen)]
    body = MAGIC + msgspec.msgpack.encode({"topics": topics, "subscriptions": subscriptions, "members": members})
    wire = decode_compact(body)
    compact = compact_request_cost(wire.partitions, wire.subscriptions, wire.member_subscription)
    assert compact == request_cost("consumer", wire.data)


def test_the_shipped_limits_are_the_settings_defaults() -> None:
    settings = Settings()
    limits = Limits(
        max_partitions=settings.max_partitions,
        max_members=settings.max_members,
        default_time_limit_ms=1,
        max_time_limit_ms=1,
        max_subscriptions=settings.max_subscriptions,
        max_task_replicas=settings.max_task_replicas,
        max_subtopology_clients=settings.max_subtopology_clients,
    )
    at_limit = RequestCost(
        settings.max_partitions,
        settings.max_members,
        subscriptions=settings.max_subscriptions,
        task_replicas=settings.max_task_replicas,
        subtopology_clients=settings.max_subtopology_clients,
    )
    assert over_limits("streams", at_limit, limits) is None
