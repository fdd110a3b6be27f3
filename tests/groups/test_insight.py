"""Looking into a stored group without changing it, on SQLite and PostgreSQL: the timeline in
figures, "what if" (solved in the solver processes, nothing stored) and "why" (a partition's
owners over the retained generations, in words), with their bad input refused naming the field."""

from __future__ import annotations

from typing import Any

import httpx

from tests.groups.conftest import ok, rebalance

TOPICS = {"orders": 12, "payments": 4}


def problem(members: list[str], **extra: Any) -> dict[str, Any]:
    return {"topics": TOPICS, "members": [{"id": m, "topics": sorted(TOPICS)} for m in members], **extra}


def make_group(http: httpx.Client, group: str) -> list[dict[str, Any]]:
    """Generation 0: ann, bob, cat; 1: dan joins; 2: bob leaves; 3: eve joins. The answers."""
    answers, generation = [], -1
    for members in (
        ["ann", "bob", "cat"],
        ["ann", "bob", "cat", "dan"],
        ["ann", "cat", "dan"],
        ["ann", "cat", "dan", "eve"],
    ):
        answers.append(ok(rebalance(http, group, generation, problem(members))))
        generation = answers[-1]["generation"]
    return answers


def owner(answer: dict[str, Any], topic: str, partition: int) -> str:
    return next(m for m, owned in answer["solution"]["assignment"].items() if partition in owned.get(topic, []))


def test_the_timeline_gives_each_generation_in_figures_oldest_first(http: httpx.Client) -> None:
    answers = make_group(http, "insight-timeline")
    timeline = ok(http.get("/v1/groups/insight-timeline/timeline"))
    assert [g["generation"] for g in timeline["generations"]] == [0, 1, 2, 3]
    for entry, answer in zip(timeline["generations"], answers, strict=True):
        stats = answer["solution"]["stats"]
        assert (entry["moves"], entry["min_load"], entry["max_load"]) == (
            stats["moves"],
            stats["min_load"],
            stats["max_load"],
        )
        assert (entry["solver"], entry["optimal"], entry["fallback"]) == (stats["solver"], True, False)
        assert entry["newcomers"] == answer["newcomers"] and entry["departed"] == answer["departed"]
    listed = ok(http.get("/v1/groups"))
    mine = next(g for g in listed["groups"] if g["group_id"] == "insight-timeline")
    assert mine["last_rebalance"]["generation"] == 3


def test_what_if_answers_beside_the_current_assignment_and_stores_nothing(http: httpx.Client) -> None:
    answers = make_group(http, "insight-what-if")
    before = ok(http.get("/v1/groups/insight-what-if"))
    history = ok(http.get("/v1/groups/insight-what-if/history"))
    changes = {"remove": ["ann"], "add": [{"id": "fay"}], "add_partitions": {"payments": 4}}
    answer = ok(http.post("/v1/groups/insight-what-if/what-if", json=changes))
    current = answers[-1]["solution"]["assignment"]
    assert answer["generation"] == 3 and answer["strategy"] == "optimal"
    assert answer["current"] == {"partitions": 16, "members": 4, "min_load": 4, "max_load": 4, "moves": 0}
    ann = sum(len(p) for p in current["ann"].values())
    # 20 partitions over ann's replacement and three others: 5 each; only ann's partitions move
    assert answer["proposed"] == {"partitions": 20, "members": 4, "min_load": 5, "max_load": 5, "moves": ann}
    assert answer["optimal"] and not answer["fallback"]
    changed = {m["id"]: m for m in answer["members"]}
    assert changed["ann"] == {"id": "ann", "now": ann, "then": 0, "gained": 0, "lost": ann}
    assert changed["fay"]["now"] == 0 and changed["fay"]["then"] == 5
    assert all(changed[m]["lost"] == 0 for m in ("cat", "dan", "eve"))
    # nothing stored: the same state, generation and history
    assert ok(http.get("/v1/groups/insight-what-if")) == before
    assert ok(http.get("/v1/groups/insight-what-if/history")) == history


def test_what_if_with_another_strategy_reports_its_moves(http: httpx.Client) -> None:
    make_group(http, "insight-strategy")
    answer = ok(http.post("/v1/groups/insight-strategy/what-if", json={"strategy": "range"}))
    assert answer["strategy"] == "range" and answer["solver"] == "range"
    assert answer["proposed"]["partitions"] == 16 and answer["proposed"]["moves"] > 0
    unchanged = ok(http.post("/v1/groups/insight-strategy/what-if", json={}))
    assert unchanged["proposed"]["moves"] == 0  # the optimal answer keeps a balanced group as it is


def refused(response: httpx.Response, status: int, field: str) -> str:
    assert response.status_code == status, response.text
    assert response.json()["field"] == field, response.json()
    detail: str = response.json()["detail"]
    return detail


def test_what_if_refuses_bad_input_naming_the_field(http: httpx.Client) -> None:
    make_group(http, "insight-bad-what-if")
    url = "/v1/groups/insight-bad-what-if/what-if"
    assert "'zed' is not in the group" in refused(http.post(url, json={"remove": ["zed"]}), 422, "remove[0]")
    assert "in the group already" in refused(http.post(url, json={"add": [{"id": "ann"}]}), 422, "add[0].id")
    twice = {"add": [{"id": "fay"}, {"id": "fay"}]}
    assert "added twice" in refused(http.post(url, json=twice), 422, "add[1].id")
    unknown = http.post(url, json={"add_partitions": {"clicks": 2}})
    assert "unknown topic 'clicks'" in refused(unknown, 422, "add_partitions.clicks")
    refused(http.post(url, json={"add_partitions": {"orders": 0}}), 422, "add_partitions.orders")
    refused(http.post(url, json={"strategy": "fastest"}), 422, "strategy")
    refused(http.post(url, json={"members": []}), 422, "members")
    not_json = http.post(url, content=b"{", headers={"Content-Type": "application/json"})
    refused(not_json, 422, "body")
    assert http.post(url, content=b"{}", headers={"Content-Type": "text/plain"}).status_code == 415
    refused(http.post("/v1/groups/insight-nobody/what-if", json={}), 404, "group_id")
    refused(http.post(url, json={"strategy": "greedy"}), 422, "strategy")  # Streams' own
    assert ok(http.get("/v1/groups/insight-bad-what-if"))["generation"] == 3


def test_explain_says_why_a_partition_is_where_it_is(http: httpx.Client) -> None:
    answers = make_group(http, "insight-explain")
    # a partition of bob's: kept while bob stayed, moved when bob left
    bobs = answers[1]["solution"]["assignment"]["bob"]["orders"][0]
    explained = ok(http.get("/v1/groups/insight-explain/explain", params={"topic": "orders", "partition": bobs}))
    reasons = [step["reason"] for step in explained["steps"]]
    assert [step["generation"] for step in explained["steps"]] == [0, 1, 2, 3]
    assert reasons[0] == "assigned" and reasons[1] == "kept" and reasons[2] == "owner-left"
    assert explained["steps"][2]["previous"] == "bob" and "which left the group" in explained["steps"][2]["words"]
    assert explained["owner"] == owner(answers[3], "orders", bobs) and explained["item"] == f"orders-{bobs}"
    assert explained["summary"].startswith(f"orders-{bobs} is with {explained['owner']} since generation")
    # a partition that moved when dan joined, from an owner that stayed: moved to reach balance
    moved = next(
        p
        for p in range(12)
        if owner(answers[1], "orders", p) == "dan" and owner(answers[0], "orders", p) in ("ann", "cat")
    )
    balance = ok(http.get("/v1/groups/insight-explain/explain", params={"topic": "orders", "partition": moved}))
    step = balance["steps"][1]
    assert step["reason"] == "balance" and step["owner"] == "dan" and "to reach balance" in step["words"]


def test_explain_names_a_streams_task(http: httpx.Client) -> None:
    streams = {"subtopologies": [{"id": "0", "partitions": 4}], "clients": [{"id": "a"}, {"id": "b"}]}
    first = ok(rebalance(http, "insight-explain-streams", -1, streams))
    runner = next(c for c, t in first["solution"]["assignment"].items() if "0_1" in t["active"])
    explained = ok(http.get("/v1/groups/insight-explain-streams/explain", params={"topic": "0", "partition": 1}))
    assert explained["item"] == "0_1" and explained["owner"] == runner
    assert explained["kind"] == "streams" and explained["steps"][0]["reason"] == "assigned"


def test_explain_refuses_bad_input_naming_the_field(http: httpx.Client) -> None:
    make_group(http, "insight-bad-explain")
    url = "/v1/groups/insight-bad-explain/explain"
    assert "no topic 'clicks'" in refused(http.get(url, params={"topic": "clicks", "partition": 0}), 422, "topic")
    assert "has 12 partitions" in refused(http.get(url, params={"topic": "orders", "partition": 12}), 422, "partition")
    refused(http.get(url, params={"topic": "orders"}), 422, "query.partition")
    refused(http.get(url, params={"topic": "orders", "partition": -1}), 422, "query.partition")
    refused(http.get(url, params={"topic": "orders", "partition": "x"}), 422, "query.partition")
    refused(http.get("/v1/groups/insight-nobody/explain", params={"topic": "orders", "partition": 0}), 404, "group_id")
    refused(http.get("/v1/groups/insight-nobody/timeline"), 404, "group_id")


def test_explain_says_whether_the_owners_rack_holds_a_replica(http: httpx.Client) -> None:
    """With `partition_racks` (KIP-881) in the rebalance, explain tells the current owner's rack
    against the partition's replicas."""
    members = [{"id": "east", "topics": ["orders"], "rack": "az1"}, {"id": "west", "topics": ["orders"], "rack": "az2"}]
    racked = {"topics": {"orders": 2}, "members": members, "partition_racks": {"orders": [["az1"], ["az2"]]}}
    answer = ok(rebalance(http, "insight-racks", -1, racked))
    assert answer["solution"]["assignment"]["east"]["orders"] == [0]  # rack-aware: each on its own rack
    explained = ok(http.get("/v1/groups/insight-racks/explain", params={"topic": "orders", "partition": 0}))
    assert explained["rack"] == "east's rack az1 holds a replica of orders-0 (replicas on az1)"
    unracked = make_group(http, "insight-no-racks")[-1]
    assert (
        unracked
        and ok(http.get("/v1/groups/insight-no-racks/explain", params={"topic": "orders", "partition": 0}))["rack"]
        is None
    )


def test_what_if_on_a_streams_application_compares_active_tasks_and_stores_nothing(http: httpx.Client) -> None:
    streams = {
        "subtopologies": [{"id": "0", "partitions": 6, "stateful": True}, {"id": "1", "partitions": 4}],
        "clients": [{"id": "s1"}, {"id": "s2"}, {"id": "s3"}],
        "config": {"num_standby_replicas": 1},
    }
    answer = ok(rebalance(http, "insight-streams-what-if", -1, streams))
    before = ok(http.get("/v1/groups/insight-streams-what-if"))
    url = "/v1/groups/insight-streams-what-if/what-if"
    tried = ok(http.post(url, json={"remove": ["s3"], "add_partitions": {"1": 2}}))
    s3 = len(answer["solution"]["assignment"]["s3"]["active"])
    assert tried["kind"] == "streams" and tried["current"]["partitions"] == 10
    assert tried["proposed"] == {"partitions": 12, "members": 2, "min_load": 6, "max_load": 6, "moves": s3}
    assert next(m for m in tried["members"] if m["id"] == "s3")["then"] == 0
    assert ok(http.post(url, json={"strategy": "greedy"}))["strategy"] == "greedy"
    refused(http.post(url, json={"strategy": "range"}), 422, "strategy")
    refused(http.post(url, json={"add_partitions": {"7": 1}}), 422, "add_partitions.7")
    refused(http.post(url, json={"add": [{"id": "s9", "topics": ["x"]}]}), 422, "add[0].topics")
    assert ok(http.get("/v1/groups/insight-streams-what-if")) == before
