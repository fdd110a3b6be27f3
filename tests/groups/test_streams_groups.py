"""Streams applications kept by the service, on SQLite and PostgreSQL: stored tasks filled in,
newcomers, a client held in grace, and a planned departure drained through KIP-441 warm-ups."""

from __future__ import annotations

from typing import Any

import httpx

from tests.groups.conftest import ok, rebalance


def app(*clients: dict[str, Any] | str, partitions: int = 6) -> dict[str, Any]:
    return {
        "subtopologies": [{"id": "0", "partitions": partitions, "stateful": True}],
        "clients": [{"id": c} if isinstance(c, str) else c for c in clients],
        "config": {"num_standby_replicas": 0, "max_warmup_replicas": 2, "acceptable_recovery_lag": 10_000},
    }


def runs(answer: dict[str, Any], client: str) -> list[str]:
    return list(answer["solution"]["assignment"].get(client, {}).get("active", []))


def test_clients_run_what_the_last_generation_gave_them_and_newcomers_are_reported(http: httpx.Client) -> None:
    first = ok(rebalance(http, "streams-gen", -1, app("m1", "m2")))
    assert first["generation"] == 0 and first["newcomers"] == ["m1", "m2"]
    same = ok(rebalance(http, "streams-gen", 0, app("m1", "m2")))
    assert same["solution"]["stats"]["active_moves"] == 0
    assert same["solution"]["assignment"] == first["solution"]["assignment"]
    grown = ok(rebalance(http, "streams-gen", 1, app("m1", "m2", "m3")))
    assert grown["newcomers"] == ["m3"] and grown["solution"]["stats"]["active_moves"] == 2


def test_a_client_back_within_its_grace_gets_its_tasks_back_with_zero_moves(http: httpx.Client) -> None:
    start = ok(rebalance(http, "streams-grace", -1, app("m1", "m2", "m3"), grace_ms=60_000))
    lost = ok(rebalance(http, "streams-grace", 0, app("m1", "m2")))
    assert [h["id"] for h in lost["held"]] == ["m3"]
    assert lost["held"][0]["assignment"]["active"] == runs(start, "m3")
    running = runs(lost, "m1") + runs(lost, "m2")
    assert not set(running) & set(runs(start, "m3")), "held tasks are run by nobody else"
    back = ok(rebalance(http, "streams-grace", 1, app("m1", "m2", "m3")))
    assert back["returning"] == ["m3"] and back["solution"]["stats"]["active_moves"] == 0
    assert back["solution"]["assignment"] == start["solution"]["assignment"]


def test_a_leaving_client_keeps_its_tasks_until_warm_ups_elsewhere_catch_up_and_ends_empty(http: httpx.Client) -> None:
    start = ok(rebalance(http, "streams-drain", -1, app("m1", "m2", "m3")))
    leaving_tasks = runs(start, "m3")
    assert len(leaving_tasks) == 2

    warming = ok(rebalance(http, "streams-drain", 0, app("m1", "m2", "m3"), leaving=["m3"]))
    assert warming["leaving"] == [{"id": "m3", "empty": False}]
    assert runs(warming, "m3") == leaving_tasks, "nobody else is caught up: the leaving client keeps running them"
    solution = warming["solution"]
    assert solution["target"]["m3"] == {"active": [], "standby": []} and solution["followup_rebalance"]
    new_owner = {t: c for c, a in solution["target"].items() for t in a["active"]}
    for task in leaving_tasks:
        assert task in solution["assignment"][new_owner[task]]["warmup"], "a warm-up on the new owner"
        assert all(task not in a["active"] for c, a in solution["assignment"].items() if c != "m3")

    def reporting(lag: int) -> dict[str, Any]:
        clients = [{"id": c, "lags": {t: lag for t, o in new_owner.items() if o == c}} for c in ("m1", "m2")]
        return app(*clients, "m3")

    lagging = ok(rebalance(http, "streams-drain", 1, reporting(50_000)))
    assert runs(lagging, "m3") == leaving_tasks, "not caught up yet: no move"

    caught_up = ok(rebalance(http, "streams-drain", 2, reporting(0)))
    assert runs(caught_up, "m3") == [] and caught_up["leaving"] == [{"id": "m3", "empty": True}]
    for task in leaving_tasks:
        assert task in runs(caught_up, new_owner[task])
    assert http.get("/v1/groups/streams-drain").json()["leaving"] == [{"id": "m3", "empty": True}]

    gone = ok(rebalance(http, "streams-drain", 3, app("m1", "m2")))
    assert gone["departed"] == ["m3"] and gone["solution"]["stats"]["active_moves"] == 0
