"""`task_costs` and `options.stickiness` as the Streams request carries them: each cost an integer
from 0 to 10^15, keyed by a task name; anything else is a 422 naming the entry. A cost for a task
that does not exist is stale, not wrong: a warning."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient

from stickyd.models.errors import ProblemError, parse
from stickyd.models.streams.index import index_streams_problem
from stickyd.models.streams.problem import MAX_TASK_COST, StreamsProblem
from stickyd.service.http.app import create_app
from stickyd.service.settings import Settings

BASE: dict[str, Any] = {
    "subtopologies": [{"id": "0", "partitions": 4}],
    "clients": [{"id": "a", "active": ["0_0", "0_1"]}, {"id": "b"}],
    "options": {"stickiness": "restore_cost"},
}


@pytest.mark.parametrize(
    ("costs", "field", "reason"),
    [
        ({"0_3": -1}, "task_costs.0_3", "greater than or equal to 0"),
        ({"0_3": MAX_TASK_COST + 1}, "task_costs.0_3", "less than or equal to 1000000000000000"),
        ({"0_3": 1.5}, "task_costs.0_3", "valid integer"),
        ({"0_3": 2.0}, "task_costs.0_3", "valid integer"),
        ({"0_3": "7"}, "task_costs.0_3", "valid integer"),
        ({"0_3": True}, "task_costs.0_3", "valid integer"),
        ({"0_3": None}, "task_costs.0_3", "valid integer"),
        ({"orders": 3}, "task_costs.orders", "is not <subtopology>_<partition>"),
        ({"0_01": 3}, "task_costs.0_01", "is not <subtopology>_<partition>"),
    ],
)
def test_a_bad_cost_is_rejected_naming_its_entry(costs: dict[str, Any], field: str, reason: str) -> None:
    with pytest.raises(ProblemError) as raised:
        parse(StreamsProblem, {**BASE, "task_costs": costs})
    assert raised.value.field == field
    assert reason in raised.value.reason


def test_task_costs_must_be_a_mapping() -> None:
    with pytest.raises(ProblemError) as raised:
        parse(StreamsProblem, {**BASE, "task_costs": [["0_1", 3]]})
    assert raised.value.field == "task_costs"


def test_an_unknown_stickiness_is_rejected() -> None:
    with pytest.raises(ProblemError) as raised:
        parse(StreamsProblem, {**BASE, "options": {"stickiness": "bytes"}})
    assert raised.value.field == "options.stickiness"


def test_the_extremes_are_accepted_and_tasks_without_an_entry_cost_one() -> None:
    problem = parse(StreamsProblem, {**BASE, "task_costs": {"0_0": 0, "0_1": MAX_TASK_COST}})
    index = index_streams_problem(problem)
    assert index.move_cost.tolist() == [0, MAX_TASK_COST, 1, 1] and index.weighted


def test_a_cost_for_a_task_that_does_not_exist_is_a_warning() -> None:
    problem = parse(StreamsProblem, {**BASE, "task_costs": {"0_1": 3, "0_4": 9, "5_0": 2}})
    index = index_streams_problem(problem)
    assert index.move_cost.tolist() == [1, 3, 1, 1]
    assert "2 task_costs on tasks that do not exist ignored: 0_4, 5_0" in index.warnings


def test_counted_moves_weigh_one_each_whatever_the_costs() -> None:
    problem = parse(StreamsProblem, {**BASE, "task_costs": {"0_1": 3}, "options": {}})
    index = index_streams_problem(problem)
    assert index.move_cost.tolist() == [1, 1, 1, 1] and not index.weighted
    assert any("task_costs ignored" in w for w in index.warnings)


def test_the_service_answers_a_bad_cost_with_422_naming_it() -> None:
    with TestClient(create_app(Settings(workers=1)), raise_server_exceptions=False) as client:
        response = client.post("/v1/assign/streams", json={**BASE, "task_costs": {"0_2": -5}})
        assert response.status_code == 422
        assert response.json()["field"] == "task_costs.0_2"
        three = [{"id": "a", "active": ["0_0", "0_1", "0_2"]}, {"id": "b"}]
        costs = {"0_0": 10, "0_1": 2, "0_2": 10}
        good = client.post("/v1/assign/streams", json={**BASE, "clients": three, "task_costs": costs})
        assert good.status_code == 200
        assert good.json()["stats"]["active_move_cost"] == 2
