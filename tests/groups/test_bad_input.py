"""Bad group requests get a 4xx naming the field, never a 500."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests.groups.conftest import ok, rebalance

GOOD = {"topics": {"t": 4}, "members": [{"id": "a", "topics": ["t"]}, {"id": "b", "topics": ["t"]}]}


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("GET", "/v1/groups/never-seen"),
        ("DELETE", "/v1/groups/never-seen"),
        ("GET", "/v1/groups/never-seen/history"),
        ("POST", "/v1/groups/never-seen/leaving"),
    ],
)
def test_an_unknown_group_is_404(http: httpx.Client, method: str, path: str) -> None:
    response = http.request(method, path, json={"members": ["a"]} if method == "POST" else None)
    assert response.status_code == 404 and response.json()["field"] == "group_id"


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"kind": "consumer", "problem": GOOD}, "generation"),
        ({"kind": "consumer", "generation": "3", "problem": GOOD}, "generation"),
        ({"kind": "consumer", "generation": 1.5, "problem": GOOD}, "generation"),
        ({"kind": "consumer", "generation": True, "problem": GOOD}, "generation"),
        ({"kind": "consumer", "generation": -2, "problem": GOOD}, "generation"),
        ({"kind": "batch", "generation": -1, "problem": GOOD}, "kind"),
        ({"kind": "consumer", "generation": -1}, "problem"),
        ({"kind": "consumer", "generation": -1, "problem": GOOD, "grace_ms": -5}, "grace_ms"),
        ({"kind": "consumer", "generation": -1, "problem": GOOD, "colour": "red"}, "colour"),
        ({"kind": "consumer", "generation": -1, "problem": [1]}, "problem"),
    ],
)
def test_a_malformed_rebalance_body_is_422_naming_the_field(http: httpx.Client, body: Any, field: str) -> None:
    response = http.post("/v1/groups/malformed/rebalance", json=body)
    assert response.status_code == 422, response.text
    assert response.json()["field"] == field
    assert http.get("/v1/groups/malformed").status_code == 404


def test_a_body_that_is_not_json_is_422(http: httpx.Client) -> None:
    response = http.post("/v1/groups/notjson/rebalance", content=b"{nope", headers={"content-type": "application/json"})
    assert response.status_code == 422 and response.json()["field"] == "body"


@pytest.mark.parametrize(
    ("body", "field"),
    [
        (b'{"kind": "consumer", "generation": -1, "generation": 0, "problem": {}}', "generation"),
        (b'{"kind": "consumer", "generation": -1, "problem": {"topics": {"t": 1, "t": 2}, "members": []}}', "t"),
    ],
)
def test_a_key_given_twice_in_a_rebalance_body_is_422_naming_it(http: httpx.Client, body: bytes, field: str) -> None:
    """The groups path parses the body once, with the same guard as /v1/assign/*: a duplicated key
    anywhere in it (the problem included, which goes to the solver as parsed) is refused, not
    silently resolved to its last value."""
    response = http.post("/v1/groups/twice/rebalance", content=body, headers={"content-type": "application/json"})
    assert response.status_code == 422, response.text
    assert response.json()["field"] == field and "duplicate key" in response.json()["reason"]
    assert http.get("/v1/groups/twice").status_code == 404


def test_a_problem_outside_the_contract_is_422_naming_the_problem_field(http: httpx.Client) -> None:
    duplicate = {"topics": {"t": 4}, "members": [{"id": "a", "topics": ["t"]}, {"id": "a", "topics": ["t"]}]}
    response = rebalance(http, "dup", -1, duplicate)
    assert response.status_code == 422 and response.json()["field"] == "problem.members[1].id"
    streams_body = rebalance(http, "dup", -1, GOOD, kind="streams")
    assert streams_body.status_code == 422 and response.json()["field"].startswith("problem")


def test_a_leaving_member_that_is_not_in_the_group_is_422(http: httpx.Client) -> None:
    ok(rebalance(http, "leavers", -1, GOOD))
    response = rebalance(http, "leavers", 0, GOOD, leaving=["a", "stranger"])
    assert response.status_code == 422 and response.json()["field"] == "leaving[1]"
    marked = http.post("/v1/groups/leavers/leaving", json={"members": ["stranger"]})
    assert marked.status_code == 422 and marked.json()["field"] == "members[0]"
    empty = http.post("/v1/groups/leavers/leaving", json={"members": []})
    assert empty.status_code == 422 and empty.json()["field"] == "members"
    assert http.get("/v1/groups/leavers").json()["generation"] == 0


def test_a_body_for_the_wrong_kind_of_group_is_422(http: httpx.Client) -> None:
    ok(rebalance(http, "consumers-only", -1, GOOD))
    streams = {"subtopologies": [{"id": "0", "partitions": 2}], "clients": [{"id": "a"}]}
    response = rebalance(http, "consumers-only", 0, streams, kind="streams")
    assert response.status_code == 422 and response.json()["field"] == "kind"
    assert http.get("/v1/groups/consumers-only").json()["kind"] == "consumer"
