"""The consumer body decoded with its claims as columns (models/consumer/wire.py) is the exact
path's result or nothing: when it answers, the request and the claim columns equal what
`load_object` + `owned_columns` make; for every odd body it steps aside (None), so the 4xx that
names the field comes from the exact path as before. `run_job` answers the same status and body
(the 4xx byte for byte, the answer but for its time) with and without it."""

from __future__ import annotations

import json
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import stickyd.service.processes.solve_job
from stickyd.models.consumer.owned import owned_columns
from stickyd.models.consumer.wire import decode_consumer
from stickyd.service.http.json_guard import load_object
from stickyd.service.processes.solve_job import Limits, run_job

LIMITS = Limits(max_partitions=100_000, max_members=1_000, default_time_limit_ms=2_000, max_time_limit_ms=10_000)


def _body(owned: Any, *, spaced: bool = False, member: str = '"id": "a", "topics": ["t", "u:1"]') -> bytes:
    owned_text = json.dumps(owned, ensure_ascii=False, separators=(", ", ": ") if spaced else (",", ":"))
    return (
        '{"topics": {"t": 4, "u:1": 3, "v[0]": 2, "é": 2}, "members": [{' + member + ', "owned": ' + owned_text + "},"
        ' {"id": "b", "topics": ["t"], "generation": 2}], "options": {"time_limit_ms": 500}}'
    ).encode()


TAKEN = [
    _body({"t": [0, 1], "u:1": [2]}),
    _body({"t": [0, 1], "u:1": [2]}, spaced=True),
    _body({}),
    _body({"t": []}),
    _body({"nope": [1, 2], "t": [3]}),
    _body({"v[0]": [1], "é": [0, 1], "t": [3, 3, 0]}),
    _body({"t": [2147483647, 0]}),
    _body({"x,{1}": [5], "t": [9]}),
    _body({"t": [1]}, member='"id": "a:b", "topics": ["x:y:z"]'),
    b'{"topics":{"t":2},"members":[{"id":"a","topics":["t"],"owned":{"t":[0]}},{"id":"b","topics":["t"]}]}',
    b'{"topics":{"t":2},"members":[]}',
    b'{"topics":{"t":2},"members":[{"id":"a","topics":["t"],"owned" :\n {"t" : [ 1 ,0 ] } }]}',
    b'{"topics":{"t":2},"members":[{"id":"a","topics":null,"generation":null,"rack":null,"owned":{"t":[0]}}]}',
    b'{"topics":{"t":2},"members":[{"topics":["t"],"generation":3,"rack":"r1","owned":{"t":[0]}}]}',
]
STEPPED_ASIDE = [
    _body({"t": [0], "u:1": [1]}).replace(b'"u:1":[1]', b'"t":[1]'),  # a key twice in one map
    _body({"t": [-1]}),
    _body({"t": [1.0]}),
    _body({"t": [1e3]}),
    _body({"t": [2147483648]}),
    _body({"t": [12345678901]}),
    _body({"t": [[1]]}),
    _body({"t": ["1"]}),
    _body({"t": [None]}),
    _body({"t": 1}),
    _body({"t": {"0": 1}}),
    _body({"": [1]}),
    _body({"a\\b": [1]}),
    _body(None),
    _body([1]),
    _body({"t": [1]}, member='"id": "a", "id": "b"'),
    _body({"t": [1]}, member='"id": "a", "extra": 1'),
    _body({"t": [1]}).replace(b'"t": 4', b'"t": 4, "t": 5'),
    _body({"t": [1]}).replace(b'"\xc3\xa9": 2', b'"\xff": 2'),
    b'{"topics":{"t":2},"members":[{"id":"a","topics":["t"],"owned":{"\xff":[0]}}]}',
    b'{"topics":[],"members":[]}',
    b'{"members":[]}',
    b'{"topics":{"t":2},"members":{}}',
    b'{"topics":{"t":2},"members":[1]}',
    b'{"topics":{"t":2},"members":[],"x":1}',
    b'{"topics":{"t":2},"members":[]',
    b"[]",
    b"",
]


def _exact_columns(data: dict[str, Any]) -> Any:
    position = {t: i for i, t in enumerate(sorted(data["topics"]))}
    return owned_columns([m.get("owned", {}) for m in data["members"]], position)


def _plain(data: dict[str, Any]) -> dict[str, Any]:
    """The request with every member's `owned` read as a plain dict."""
    members = [{k: dict(v) if k == "owned" else v for k, v in m.items()} for m in data["members"]]
    return {**data, "members": members}


@pytest.mark.parametrize("body", TAKEN)
def test_a_plain_body_is_decoded_to_the_exact_request_and_claim_columns(body: bytes) -> None:
    wire = decode_consumer(body)
    assert wire is not None
    exact = load_object(body)
    assert _plain(wire.data) == exact
    assert wire.columns == _exact_columns(exact)


@pytest.mark.parametrize("body", STEPPED_ASIDE)
def test_an_odd_body_is_left_to_the_exact_path(body: bytes) -> None:
    assert decode_consumer(body) is None


def _answer(body: bytes, fast: bool, monkeypatch: pytest.MonkeyPatch) -> tuple[int, Any]:
    with monkeypatch.context() as patch:
        patch.setattr(stickyd.service.processes.solve_job, "COLUMN_DECODE_MIN_BYTES", 0)  # every body, however small
        if not fast:
            patch.setattr(stickyd.service.processes.solve_job, "decode_consumer", lambda _body: None)
        result = run_job("consumer", body, LIMITS)
    if result.status != 200:
        return result.status, result.body
    answer = orjson.loads(result.body)
    answer["stats"].pop("time_ms")
    return result.status, answer


@pytest.mark.parametrize("body", TAKEN + STEPPED_ASIDE)
def test_run_job_answers_the_same_with_and_without_the_column_decoder(
    body: bytes, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert _answer(body, True, monkeypatch) == _answer(body, False, monkeypatch)


def test_a_bad_claim_is_named_by_the_exact_path(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(stickyd.service.processes.solve_job, "COLUMN_DECODE_MIN_BYTES", 0)
    result = run_job("consumer", _body({"t": [0, -3]}), LIMITS)
    assert result.status == 422
    assert orjson.loads(result.body)["field"] == "members[0].owned.t[1]"


TOPICS = ["t", "u", "topic-1", "x:y", "é", "[a]"]
partitions = st.one_of(
    st.integers(min_value=0, max_value=12),
    st.integers(min_value=-3, max_value=2**31 + 3),
    st.sampled_from([1.5, "3", None, [1], True]),
)
owned_maps = st.dictionaries(
    st.one_of(st.sampled_from(TOPICS), st.text(max_size=3)), st.lists(partitions, max_size=4), max_size=4
)


@st.composite
def bodies(draw: st.DrawFn) -> bytes:
    members = []
    for i in range(draw(st.integers(min_value=1, max_value=4))):
        member: dict[str, Any] = {"id": f"m{i}", "topics": draw(st.lists(st.sampled_from(TOPICS), max_size=3))}
        if draw(st.booleans()):
            member["owned"] = draw(owned_maps)
        if draw(st.booleans()):
            member["generation"] = draw(st.integers(min_value=-2, max_value=3))
        members.append(member)
    problem = {"topics": {t: draw(st.integers(min_value=0, max_value=6)) for t in TOPICS[:4]}, "members": members}
    separators = draw(st.sampled_from([(",", ":"), (", ", ": "), (" ,", " : ")]))
    return json.dumps(problem, separators=separators, ensure_ascii=draw(st.booleans())).encode()


@settings(max_examples=150, deadline=None)
@given(bodies())
def test_any_body_gets_the_same_answer_with_and_without_the_column_decoder(body: bytes) -> None:
    wire = decode_consumer(body)
    if wire is not None:
        exact = load_object(body)
        assert _plain(wire.data) == exact
        assert wire.columns == _exact_columns(exact)
    with pytest.MonkeyPatch.context() as patch:
        fast = _answer(body, True, patch)
        exact_answer = _answer(body, False, patch)
    assert fast == exact_answer


def test_run_job_decodes_a_large_plain_body_by_columns(monkeypatch: pytest.MonkeyPatch) -> None:
    """The comparisons above are not between two copies of the exact path: run_job really uses
    the column decoder from COLUMN_DECODE_MIN_BYTES on, and not below it."""
    used: list[bool] = []

    def spy(body: bytes) -> Any:
        wire = decode_consumer(body)
        used.append(wire is not None)
        return wire

    monkeypatch.setattr(stickyd.service.processes.solve_job, "decode_consumer", spy)
    body = TAKEN[0]
    monkeypatch.setattr(stickyd.service.processes.solve_job, "COLUMN_DECODE_MIN_BYTES", len(body) + 1)
    assert run_job("consumer", body, LIMITS).status == 200
    assert used == []
    monkeypatch.setattr(stickyd.service.processes.solve_job, "COLUMN_DECODE_MIN_BYTES", len(body))
    assert run_job("consumer", body, LIMITS).status == 200
    assert used == [True]
