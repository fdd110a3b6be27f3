"""Consumer groups kept by the service, on SQLite and PostgreSQL: generations, fencing, newcomers,
lost-member grace and planned departures."""

from __future__ import annotations

import time
from typing import Any

import httpx

from tests.groups.conftest import ok, rebalance


def problem(*members: str, **options: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "topics": {"orders": 6},
        "members": [{"id": m, "topics": ["orders"]} for m in members],
    }
    if options:
        body["options"] = options
    return body


def partitions_of(answer: dict[str, Any], member: str) -> list[int]:
    return list(answer["solution"]["assignment"].get(member, {}).get("orders", []))


def test_generations_increase_by_one_and_the_stored_assignment_is_what_members_own(http: httpx.Client) -> None:
    """Members that leave `owned` out own what the last generation gave them: a newcomer takes
    only its share (2 moves of 6), and GET shows the current generation and assignment."""
    first = ok(rebalance(http, "gen", -1, problem("a", "b")))
    assert first["generation"] == 0 and sorted(first["newcomers"]) == ["a", "b"]
    second = ok(rebalance(http, "gen", 0, problem("a", "b", "c")))
    assert second["generation"] == 1 and second["newcomers"] == ["c"]
    assert second["solution"]["stats"]["moves"] == 2 and second["solution"]["stats"]["owned"] == 6
    kept = set(partitions_of(first, "a")) & set(partitions_of(second, "a"))
    assert len(kept) == 2
    third = ok(rebalance(http, "gen", 1, problem("a", "b", "c")))
    assert third["generation"] == 2 and third["newcomers"] == [] and third["solution"]["stats"]["moves"] == 0
    state = http.get("/v1/groups/gen").json()
    assert state["generation"] == 2 and state["assignment"] == third["solution"]["assignment"]
    assert state["history"] == 3


def test_a_stale_generation_gets_409_and_changes_nothing(http: httpx.Client) -> None:
    ok(rebalance(http, "stale", -1, problem("a", "b")))
    ok(rebalance(http, "stale", 0, problem("a", "b")))
    before = http.get("/v1/groups/stale").json()
    for sent in (0, -1, 7):
        refused = rebalance(http, "stale", sent, problem("zombie"))
        assert refused.status_code == 409, refused.text
        assert refused.json()["generation"] == 1 and refused.json()["field"] == "generation"
    assert http.get("/v1/groups/stale").json() == before


def test_a_lost_member_within_its_grace_gets_its_partitions_back_with_zero_moves(http: httpx.Client) -> None:
    start = ok(rebalance(http, "grace", -1, problem("a", "b", "c"), grace_ms=60_000))
    lost = ok(rebalance(http, "grace", 0, problem("a", "b")))
    held = {h["id"]: h for h in lost["held"]}
    assert list(held) == ["c"] and held["c"]["assignment"] == start["solution"]["assignment"]["c"]
    # nobody else is given c's partitions while they are held, and a and b keep theirs
    for member in ("a", "b"):
        assert partitions_of(lost, member) == partitions_of(start, member)
    assert "c" not in lost["solution"]["assignment"]
    back = ok(rebalance(http, "grace", 1, problem("a", "b", "c")))
    assert back["returning"] == ["c"] and back["held"] == [] and back["newcomers"] == []
    assert back["solution"]["stats"]["moves"] == 0
    assert back["solution"]["assignment"] == start["solution"]["assignment"]


def test_after_the_grace_a_lost_members_partitions_are_reassigned(http: httpx.Client) -> None:
    ok(rebalance(http, "expiry", -1, problem("a", "b", "c"), grace_ms=300))
    lost = ok(rebalance(http, "expiry", 0, problem("a", "b")))
    assert [h["id"] for h in lost["held"]] == ["c"]
    time.sleep(0.4)
    after = ok(rebalance(http, "expiry", 1, problem("a", "b")))
    assert after["reassigned"] == ["c"] and after["held"] == []
    assert sorted(partitions_of(after, "a") + partitions_of(after, "b")) == list(range(6))
    assert http.get("/v1/groups/expiry").json()["held"] == []


def test_without_grace_a_vanished_member_is_gone_at_once(http: httpx.Client) -> None:
    ok(rebalance(http, "nograce", -1, problem("a", "b", "c")))
    after = ok(rebalance(http, "nograce", 0, problem("a", "b")))
    assert after["departed"] == ["c"] and after["held"] == []
    assert sorted(partitions_of(after, "a") + partitions_of(after, "b")) == list(range(6))


def test_a_planned_departure_under_cooperative_is_revoked_then_handed_over(http: httpx.Client) -> None:
    """A member marked leaving gets nothing new; round 1 revokes what it owns (nobody gets it
    yet), round 2 hands it over, and the group says the member is empty from then on."""
    coop = {"protocol": "cooperative"}
    start = ok(rebalance(http, "drain", -1, problem("a", "b", "c", **coop)))
    owned_by_c = partitions_of(start, "c")
    marked = http.post("/v1/groups/drain/leaving", json={"members": ["c"]})
    assert marked.status_code == 200 and marked.json()["leaving"] == [{"id": "c", "empty": False}]
    revoking = ok(rebalance(http, "drain", 0, problem("a", "b", "c", **coop)))
    assert revoking["solution"]["revoke"]["c"] == {"orders": owned_by_c}
    assert revoking["leaving"] == [{"id": "c", "empty": False}]
    given = partitions_of(revoking, "a") + partitions_of(revoking, "b")
    assert not set(given) & set(owned_by_c)
    handed = ok(rebalance(http, "drain", 1, problem("a", "b", "c", **coop)))
    assert handed["leaving"] == [{"id": "c", "empty": True}] and partitions_of(handed, "c") == []
    assert sorted(partitions_of(handed, "a") + partitions_of(handed, "b")) == list(range(6))
    assert http.get("/v1/groups/drain").json()["leaving"] == [{"id": "c", "empty": True}]
    gone = ok(rebalance(http, "drain", 2, problem("a", "b", **coop)))
    assert gone["departed"] == ["c"] and gone["leaving"] == [] and gone["solution"]["stats"]["moves"] == 0


def test_history_lists_generations_and_delete_forgets_the_group(http: httpx.Client) -> None:
    for generation in range(-1, 2):
        ok(rebalance(http, "forget-me", generation, problem("a", "b")))
    history = http.get("/v1/groups/forget-me/history", params={"limit": 2}).json()
    assert [h["generation"] for h in history["generations"]] == [2, 1]
    assert history["generations"][0]["record"]["solution"]["assignment"]
    assert "forget-me" in [g["group_id"] for g in http.get("/v1/groups").json()["groups"]]
    assert http.delete("/v1/groups/forget-me").status_code == 204
    assert http.get("/v1/groups/forget-me").status_code == 404
    assert "forget-me" not in [g["group_id"] for g in http.get("/v1/groups").json()["groups"]]
    # a forgotten group starts again from -1, and its old generation numbers are not reused
    again = ok(rebalance(http, "forget-me", -1, problem("a")))
    assert again["generation"] == 3 and again["newcomers"] == ["a"]
