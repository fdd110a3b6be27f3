"""A stored consumer group balanced by load: `options.balance`, `options.load_tolerance`,
`partition_weights` and members' `capacity` reach the solve as the plain endpoint takes them, the
history keeps `stats.load`, and a held member keeps its capacity."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from typer.testing import CliRunner

from stickyd.cli.main import app
from tests.groups.conftest import ok, rebalance

# docs/wire-format.md, balance `load`: L* = 450 (orders 0 alone on `big`); the claimed assignment's
# bottleneck, `big` at (900 + 40) / 2 = 470, is within 5% of it, so nothing moves
WEIGHTS = {"orders": [900, 40, 40, 20], "clicks": 100}
LOAD = {
    "topics": {"orders": 4, "clicks": 3},
    "partition_weights": WEIGHTS,
    "members": [
        {"id": "big", "topics": ["orders", "clicks"], "capacity": 2, "owned": {"orders": [0, 1]}, "generation": 3},
        {
            "id": "small",
            "topics": ["orders", "clicks"],
            "owned": {"orders": [2, 3], "clicks": [0, 1, 2]},
            "generation": 3,
        },
    ],
    "options": {"balance": "load", "load_tolerance": 0.05},
}


def without_owned(problem: dict[str, Any], drop: str | None = None) -> dict[str, Any]:
    members = [{k: v for k, v in m.items() if k not in ("owned", "generation")} for m in problem["members"]]
    return {**problem, "members": [m for m in members if m["id"] != drop]}


def test_a_load_rebalance_answers_as_the_plain_endpoint(http: httpx.Client) -> None:
    plain = ok(http.post("/v1/assign/consumer", json=LOAD))
    body = ok(rebalance(http, "load-plain", -1, LOAD))
    assert body["solution"]["assignment"] == plain["assignment"]
    load = body["solution"]["stats"]["load"]
    assert load["max"] == 470.0 and load["lower_bound"] == 450.0 and body["solution"]["stats"]["moves"] == 0


def test_the_history_and_the_group_keep_the_load_figures(http: httpx.Client) -> None:
    ok(rebalance(http, "load-history", -1, LOAD))
    history = ok(http.get("/v1/groups/load-history/history"))["generations"]
    assert history[-1]["record"]["solution"]["stats"]["load"]["max"] == 470.0
    state = ok(http.get("/v1/groups/load-history"))
    assert state["stats"]["load"]["lower_bound"] == 450.0
    assert state["members"]["big"]["capacity"] == 2 and "capacity" not in state["members"]["small"]


def test_the_stored_assignment_is_owned_under_load(http: httpx.Client) -> None:
    """The next round leaves `owned` out: the stored assignment is what each member owns, so a
    rebalance with the same weights moves nothing."""
    first = ok(rebalance(http, "load-sticky", -1, LOAD))
    again = ok(rebalance(http, "load-sticky", 0, without_owned(LOAD)))
    assert again["solution"]["assignment"] == first["solution"]["assignment"]
    assert again["solution"]["stats"]["moves"] == 0


def test_a_held_member_keeps_its_capacity(http: httpx.Client) -> None:
    """`big` vanishes within its grace: it is solved with its capacity 2, so it keeps what it had
    (its normalized load stays the bottleneck's), and nothing moves."""
    first = ok(rebalance(http, "load-held", -1, LOAD, grace_ms=60_000))
    kept = first["solution"]["assignment"]["big"]
    again = ok(rebalance(http, "load-held", 0, without_owned(LOAD, drop="big")))
    assert [h["id"] for h in again["held"]] == ["big"] and again["held"][0]["assignment"] == kept
    assert again["solution"]["stats"]["moves"] == 0
    assert again["solution"]["stats"]["load"]["max"] == 470.0


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"options": {"balance": "weight"}}, "problem.options.balance"),
        ({"options": {"balance": "load", "load_tolerance": 2}}, "problem.options.load_tolerance"),
        ({"partition_weights": {"orders": [1, 2]}}, "problem.partition_weights.orders"),
        ({"partition_weights": {"payments": 3}}, "problem.partition_weights.payments"),
        ({"partition_weights": "live"}, "problem.partition_weights"),
        ({"members": [{"id": "big", "topics": ["orders"], "capacity": 0}]}, "problem.members[0].capacity"),
    ],
)
def test_a_bad_load_value_is_422_naming_the_field(http: httpx.Client, change: dict[str, Any], field: str) -> None:
    response = rebalance(http, "load-bad", -1, {**LOAD, **change})
    assert response.status_code == 422, response.text
    assert response.json()["field"] == field
    assert http.get("/v1/groups/load-bad").status_code == 404


def test_the_groups_commands_show_the_bottleneck(http: httpx.Client) -> None:
    ok(rebalance(http, "load-cli", -1, LOAD))
    runner = CliRunner()
    url = str(http.base_url).rstrip("/")
    shown = runner.invoke(app, ["groups", "show", "load-cli", "--url", url], env={"COLUMNS": "200"})
    assert shown.exit_code == 0 and "bottleneck 470 (best >= 450)" in " ".join(shown.output.split())
    history = runner.invoke(app, ["groups", "history", "load-cli", "--url", url], env={"COLUMNS": "200"})
    assert history.exit_code == 0 and "470 (best >= 450)" in history.output
