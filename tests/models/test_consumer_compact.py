"""The compact consumer encoding (models/consumer/compact.py, solvers/consumer/answer_compact.py):
every bad compact body gets a 422 naming the field, and on random problems the compact request
gets the same answer as the same request in JSON (the answer read back from its runs and its
`unchanged` members)."""

from __future__ import annotations

import json
from typing import Any

import msgspec
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from stickyd.models.consumer.compact import MAGIC, decode_compact
from stickyd.models.consumer.compact_codec import decode_answer, encode_request
from stickyd.models.consumer.index import _one_claimant, index_consumer_problem
from stickyd.models.consumer.owned import OwnedColumns
from stickyd.models.consumer.problem import ConsumerProblem
from stickyd.models.errors import parse
from stickyd.service.processes.solve_job import Limits, run_job
from stickyd.solvers.consumer.answer_compact import unchanged

LIMITS = Limits(max_partitions=100_000, max_members=1_000, default_time_limit_ms=2_000, max_time_limit_ms=10_000)


def _compact_problem(body: bytes) -> ConsumerProblem:
    """A compact body read as the service reads it: the contract's dict and its claim columns."""
    request = decode_compact(body)
    return parse(ConsumerProblem, request.data, context=request.context)


def _runs(*rows: tuple[int, int, int, int]) -> bytes:
    return np.array(rows, dtype="<i4").reshape(-1, 4).tobytes()


GOOD: dict[str, Any] = {
    "topics": [["t", 6], ["u", 2]],
    "subscriptions": [[0], [0, 1]],
    "members": [["m1", 0, 3], ["m2", 1], ["m3", 1]],
    "owned": _runs((0, 0, 0, 3), (1, 0, 3, 3), (1, 1, 0, 2)),
    "options": {"time_limit_ms": 1000},
}


def _body(**changes: Any) -> bytes:
    return MAGIC + msgspec.msgpack.encode({**GOOD, **changes})


BAD = [
    (_body()[:-5], "body", "truncated"),
    (MAGIC + b"\x01", "body", "Expected `object`"),
    (_body(extra=1), "body", "unknown field `extra`"),
    (_body(topics=[["t", 6], ["t", 2]]), "topics[1].name", "duplicate topic 't'"),
    (_body(topics=[["t", "6"], ["u", 2]]), "topics[0].partitions", "Expected `int`"),
    (_body(topics=[["t", -1], ["u", 2]]), "topics[0].partitions", "not a partition count"),
    (_body(subscriptions=[[0, 7]]), "subscriptions[0][1]", "topic index 7 out of range"),
    (_body(subscriptions=[[0], [1, -1]]), "subscriptions[1][1]", ">= 0"),
    (_body(members=[["m1", "x"]]), "members[0].subscription", "Expected `int`"),
    (_body(members=[["m1", 0], ["m2", 2]]), "members[1].subscription", "subscription index 2 out of range"),
    (_body(members=[["m1", 0], ["m1", 1]]), "members[1].id", "duplicate member id"),
    (_body(members=[["m1", 0, -7], ["m2", 1], ["m3", 1]]), "members[0].generation", "greater than or equal to -1"),
    (_body(owned=b"123"), "owned", "not a whole number of runs"),
    (_body(owned=_runs((5, 0, 0, 1))), "owned[0].member", "member index 5 out of range"),
    (_body(owned=_runs((0, 0, 0, 1), (0, 9, 0, 1))), "owned[1].topic", "unknown topic index 9"),
    (_body(owned=_runs((0, 0, -2, 1))), "owned[0].first", "negative"),
    (_body(owned=_runs((0, 0, 0, 0))), "owned[0].count", "at least 1"),
    (_body(owned=_runs((0, 0, 5, 3))), "owned[0]", "partitions 5..7 out of range (t has 6 partitions)"),
    (_body(options={"strategy": "fastest"}), "options.strategy", ""),
    (_body(owners=b"\0" * 12), "owners", "12 bytes, but the topics have 8 partitions"),
    (
        _body(owners=np.array([0, 0, 0, 1, 1, 7, 1, 1], dtype="<i4").tobytes()),
        "owners[5]",
        "member index 7 out of range",
    ),
    (_body(owners=np.array([0, 0, 0, 1, 1, 1, 1, -2], dtype="<i4").tobytes()), "owners[7]", "u partition 1"),
]


@pytest.mark.parametrize(("body", "field", "reason"), BAD)
def test_a_bad_compact_body_is_a_422_naming_the_field(body: bytes, field: str, reason: str) -> None:
    result = run_job("consumer", body, LIMITS)
    answer = json.loads(result.body)
    assert (result.status, answer["field"]) == (422, field), answer
    assert reason in answer["reason"]


def test_an_oversized_compact_request_is_a_413_before_its_claims_are_expanded() -> None:
    body = _body(topics=[["t", 2_000_000_000], ["u", 2]], owned=_runs((0, 0, 0, 2_000_000_000)))
    result = run_job("consumer", body, LIMITS)
    assert (result.status, json.loads(result.body)["field"]) == (413, "topics")


def test_the_answer_lists_unchanged_members_instead_of_their_partitions() -> None:
    result = run_job("consumer", _body(), LIMITS)
    assert result.status == 200 and result.body.startswith(MAGIC)
    answer = msgspec.msgpack.decode(result.body[len(MAGIC) :])
    assert answer["unchanged"] == [0]  # m1 keeps t 0-2
    owner = np.frombuffer(answer["assignment"], dtype="<i4").tolist()
    assert owner[:3] == [0, 0, 0] and owner[6:] == [1, 1]  # t 0-5, then u 0-1
    assert sorted(owner[3:6]) == [1, 2, 2]  # m2 keeps one of t 3-5 and u; m3 takes two


def test_dense_owners_and_runs_claim_alike() -> None:
    """The same claims sent as the dense `owners` array (one member index per partition) and as
    runs get the same answer."""
    owners = np.array([0, 0, 0, 1, 1, 1, 1, 1], dtype="<i4").tobytes()
    by_runs = run_job("consumer", _body(), LIMITS)
    by_owners = run_job("consumer", _body(owned=b"", owners=owners), LIMITS)
    halves = run_job(
        "consumer", _body(owned=_runs((1, 0, 3, 3), (1, 1, 0, 2)), owners=owners[:12] + bytes([255]) * 20), LIMITS
    )
    strip = lambda body: {k: v for k, v in msgspec.msgpack.decode(body[len(MAGIC) :]).items() if k != "stats"}  # noqa: E731
    assert strip(by_runs.body) == strip(by_owners.body) == strip(halves.body)


def _normal(maps: dict[str, dict[str, list[int]]] | None) -> dict[str, dict[str, list[int]]] | None:
    if maps is None:
        return None
    return {m: {t: sorted(p) for t, p in per.items() if p} for m, per in maps.items() if any(per.values())}


@st.composite
def problems(draw: st.DrawFn) -> dict[str, Any]:
    topics = {f"t{i}": draw(st.integers(1, 12)) for i in range(draw(st.integers(1, 4)))}
    names = list(topics)
    members = []
    for m in range(draw(st.integers(1, 6))):
        subscribed = draw(st.lists(st.sampled_from(names), min_size=1, max_size=len(names), unique=True))
        owned = {
            t: draw(st.lists(st.integers(0, topics[t] - 1), max_size=topics[t], unique=True))
            for t in draw(st.lists(st.sampled_from(names), max_size=len(names), unique=True))
        }
        member: dict[str, Any] = {"id": f"c{draw(st.integers(0, 99))}-{m}", "topics": subscribed, "owned": owned}
        if draw(st.booleans()):
            member["generation"] = draw(st.integers(-1, 3))
        members.append(member)
    options = {
        "protocol": draw(st.sampled_from(["eager", "cooperative"])),
        "strategy": draw(st.sampled_from(["optimal", "optimal", "sticky", "range"])),
        "balance": draw(st.sampled_from(["count", "count", "per_topic"])),
    }
    return {"topics": topics, "members": members, "options": options}


def _assert_same_answer(request: dict[str, Any]) -> dict[str, Any]:
    """The request's compact body gets the answer its JSON body gets; returns that answer."""
    by_json = run_job("consumer", json.dumps(request).encode(), LIMITS)
    by_compact = run_job("consumer", encode_request(request), LIMITS)
    assert by_json.status == by_compact.status == 200, (by_json.body, by_compact.body)
    expected = json.loads(by_json.body)
    got = decode_answer(by_compact.body, request)
    for field in ("assignment", "revoke", "target"):
        assert _normal(got[field]) == _normal(expected[field]), field
    assert {t: sorted(p) for t, p in got["unassigned"].items()} == expected["unassigned"]
    expected["stats"].pop("time_ms"), got["stats"].pop("time_ms")
    assert got["stats"] == expected["stats"]
    return expected


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(problems())
def test_compact_and_json_requests_get_the_same_answer(request: dict[str, Any]) -> None:
    _assert_same_answer(request)


@pytest.mark.parametrize("protocol", ["eager", "cooperative"])
def test_dense_owners_alone_are_resolved_without_a_contest_as_json_claims_are(protocol: str) -> None:
    """Claims sent only as the dense `owners` array by members listed in id order (as the plug-in
    sends them) are taken without sorting or a contest, one claimant per partition: a claim on a
    topic its member does not subscribe to is still ignored and named, and generations do not
    matter, as in the JSON body's resolution."""
    request = {
        "topics": {"t": 4, "u": 2},
        "members": [
            {"id": "a", "topics": ["t"], "owned": {"t": [0, 1], "u": [0]}, "generation": 3},
            {"id": "b", "topics": ["t", "u"], "owned": {"t": [2]}, "generation": 1},
            {"id": "c", "topics": ["t", "u"], "owned": {"u": [1]}},
        ],
        "options": {"protocol": protocol},
    }
    problem = _compact_problem(encode_request(request))
    assert problem.owned_columns is not None and problem.owned_columns.dense is not None
    assert _one_claimant(problem)
    assert index_consumer_problem(problem).owned == 4  # the claim on u-0 is ignored
    answer = _assert_same_answer(request)
    assert any("topic not subscribed" in w for w in answer["stats"]["warnings"]), answer["stats"]


@pytest.mark.parametrize("limit_ms", [1, 127, 250, 1000, 65_535, 600_000])
def test_the_web_process_reads_a_compact_bodys_time_limit_without_decoding_it(limit_ms: int) -> None:
    from stickyd.service.http.answering import time_limit_hint_ms

    assert time_limit_hint_ms(_body(options={"time_limit_ms": limit_ms})) == limit_ms
    assert time_limit_hint_ms(_body(options={})) is None


@settings(max_examples=80, deadline=None)
@given(st.data())
def test_unchanged_members_from_the_dense_owners_match_the_claim_columns(data: st.DataObject) -> None:
    """The shortcut for claims sent only as the dense `owners` array (compare it with the answer's)
    names the same unchanged members as the general reading of the claim columns."""
    counts = data.draw(st.lists(st.integers(1, 6), min_size=1, max_size=4))
    members = data.draw(st.integers(1, 5))
    slots = sum(counts)
    claimed = data.draw(st.lists(st.integers(-1, members - 1), min_size=slots, max_size=slots))
    answer = np.array(data.draw(st.lists(st.integers(-1, members - 1), min_size=slots, max_size=slots)), dtype="<i4")
    request = {
        "topics": [[f"t{t}", c] for t, c in enumerate(counts)],
        "subscriptions": [list(range(len(counts)))],
        "members": [[f"m{m}", 0] for m in range(members)],
        "owned": b"",
        "owners": np.array(claimed, dtype="<i4").tobytes(),
    }
    problem = _compact_problem(MAGIC + msgspec.msgpack.encode(request))
    assert problem.owned_columns is not None and problem.owned_columns.dense is not None
    general = problem.model_copy()
    columns = problem.owned_columns
    general._owned_columns = OwnedColumns(columns.member, columns.topic, columns.partition)  # noqa: SLF001
    assert unchanged(problem, answer).tolist() == unchanged(general, answer).tolist()


@settings(max_examples=120, deadline=None)
@given(st.data())
def test_dense_claims_resolve_as_the_same_request_in_json_does(data: st.DataObject) -> None:
    """Claims read in place from the dense `owners` array (topics listed out of name order, claims
    on topics the member does not read) resolve exactly as the same request in JSON: the same
    owners, the same ignored claims named in the same order, the same claims reported per member,
    the same count of (member, topic) pairs."""
    counts = [data.draw(st.integers(1, 5)), *data.draw(st.lists(st.integers(0, 5), max_size=3))]
    members = data.draw(st.integers(1, 5))
    slots = sum(counts)
    claimed = data.draw(st.lists(st.integers(-1, members - 1), min_size=slots, max_size=slots))
    topics = [f"t{t}" for t in range(len(counts))]
    reads = data.draw(st.lists(st.lists(st.sampled_from(range(len(counts))), unique=True), min_size=1, max_size=3))
    request = {
        "topics": [[name, c] for name, c in zip(reversed(topics), reversed(counts), strict=True)],
        "subscriptions": reads,
        "members": [[f"m{m}", data.draw(st.integers(0, len(reads) - 1))] for m in range(members)],
        "owned": b"",
        "owners": np.array(claimed, dtype="<i4").tobytes(),
    }
    problem = _compact_problem(MAGIC + msgspec.msgpack.encode(request))
    assert _one_claimant(problem)
    # the same request in JSON: each member's claims as its `owned` map
    owned: list[dict[str, list[int]]] = [{} for _ in range(members)]
    at = 0
    for name, count in request["topics"]:
        for p in range(count):
            if claimed[at] >= 0:
                owned[claimed[at]].setdefault(name, []).append(p)
            at += 1
    general = parse(
        ConsumerProblem,
        {
            "topics": dict(request["topics"]),
            "members": [
                {"id": m, "topics": [request["topics"][t][0] for t in reads[s]], "owned": owned[i]}
                for i, (m, s) in enumerate(request["members"])
            ],
        },
    )
    dense, read = index_consumer_problem(problem), index_consumer_problem(general)
    assert [g.claims.tolist() for g in dense.groups] == [g.claims.tolist() for g in read.groups]
    assert dense.warnings == read.warnings
    assert dense.owned == read.owned
    assert list(map(_lists, dense.reported)) == list(map(_lists, read.reported))
    assert dense.reported.member_topic_pairs() == read.reported.member_topic_pairs()


def _lists(claims: dict[str, np.ndarray]) -> dict[str, list[int]]:
    return {topic: parts.tolist() for topic, parts in claims.items()}


def test_the_index_reads_a_compact_bodys_topic_numbers_as_the_names_would_read() -> None:
    """The subscriptions' topic numbers come straight from the compact body: a list no member
    uses, a topic listed twice and members out of id order index as the same request in JSON."""
    body = _body(
        topics=[["u", 2], ["t", 6], ["w", 3]],
        subscriptions=[[2], [1, 1], [1, 0]],
        members=[["m3", 2], ["m1", 1], ["m2", 2]],
        owned=_runs((1, 1, 0, 3), (0, 0, 0, 2), (2, 1, 3, 3)),
    )
    same = {
        "topics": {"u": 2, "t": 6, "w": 3},
        "members": [
            {"id": "m3", "topics": ["t", "u"], "owned": {"u": [0, 1]}},
            {"id": "m1", "topics": ["t"], "owned": {"t": [0, 1, 2]}},
            {"id": "m2", "topics": ["t", "u"], "owned": {"t": [3, 4, 5]}},
        ],
    }
    compact, as_json = _compact_problem(body), parse(ConsumerProblem, same)
    assert compact.subscription_ids is not None and as_json.subscription_ids is None
    by_numbers, by_names = index_consumer_problem(compact), index_consumer_problem(as_json)
    assert by_numbers.topics == by_names.topics == {"t": 6, "u": 2}  # nobody reads w
    assert by_numbers.subscriptions == by_names.subscriptions
    for a, b in zip(by_numbers.groups, by_names.groups, strict=True):
        assert (a.topics, a.eligible, a.claims.tolist()) == (b.topics, b.eligible, b.claims.tolist())


def test_a_compact_bodys_subscriptions_read_as_names_where_a_solver_asks() -> None:
    """Lists that name each topic once are indexed from their numbers alone; a solver reading a
    member's topics by name gets what the JSON request gives, and two lists holding the same
    topics in another order are equal subscriptions."""
    body = _body(
        topics=[["u", 2], ["t", 6]],
        subscriptions=[[0, 1], [1, 0]],
        members=[["m2", 1], ["m1", 0]],
        owned=_runs((0, 1, 0, 6), (1, 0, 0, 2)),
    )
    same = {
        "topics": {"u": 2, "t": 6},
        "members": [
            {"id": "m2", "topics": ["t", "u"], "owned": {"t": [0, 1, 2, 3, 4, 5]}},
            {"id": "m1", "topics": ["u", "t"], "owned": {"u": [0, 1]}},
        ],
    }
    by_numbers = index_consumer_problem(_compact_problem(body))
    by_names = index_consumer_problem(parse(ConsumerProblem, same))
    assert not isinstance(by_numbers.subscriptions, tuple)  # made from the numbers on demand
    assert tuple(by_numbers.subscriptions) == by_names.subscriptions == (frozenset("tu"), frozenset("tu"))
    assert by_numbers.subscriptions[-1] == frozenset("tu") and by_numbers.subscriptions[:1] == (frozenset("tu"),)
    assert by_numbers.equal_subscriptions and by_names.equal_subscriptions
