"""The compact consumer encoding against a real `stickyd serve` on 127.0.0.1: negotiated by
Content-Type, answered in kind (a compact answer with the compact media type, errors as JSON with
the field named), refused where it does not belong (415, 422), and the same answers as JSON."""

from __future__ import annotations

import json
from typing import Any

import httpx
import msgspec
import numpy as np
import pytest

from stickyd.cli.child_service import ServiceProcess
from stickyd.client.http import StickydClient, StickydError
from stickyd.models.consumer.compact import MAGIC, MEDIA_TYPE
from stickyd.models.consumer.compact_codec import decode_answer, encode_request

COMPACT = {"content-type": MEDIA_TYPE}
REQUEST: dict[str, Any] = {
    "topics": {"orders": 12, "payments": 4},
    "members": [
        {"id": "c1", "topics": ["orders", "payments"], "owned": {"orders": [0, 1, 2, 3, 4, 5]}, "generation": 3},
        {"id": "c2", "topics": ["orders"], "owned": {"orders": [6, 7, 8, 9, 10, 11]}, "generation": 3},
        {"id": "c3", "topics": ["orders", "payments"]},
    ],
    "options": {"time_limit_ms": 2000},
}


def _post(service: ServiceProcess, path: str, body: bytes, headers: dict[str, str]) -> httpx.Response:
    return httpx.post(f"{service.url}{path}", content=body, headers=headers, timeout=30)


def test_a_compact_request_gets_a_compact_answer_equal_to_the_json_one(service: ServiceProcess) -> None:
    compact = _post(service, "/v1/assign/consumer", encode_request(REQUEST), COMPACT)
    assert compact.status_code == 200
    assert compact.headers["content-type"] == MEDIA_TYPE and compact.content.startswith(MAGIC)
    by_json = httpx.post(f"{service.url}/v1/assign/consumer", json=REQUEST, timeout=30).json()
    got = decode_answer(compact.content, REQUEST)
    assert got["assignment"] == by_json["assignment"]
    assert got["unassigned"] == by_json["unassigned"]
    assert {k: v for k, v in got["stats"].items() if k != "time_ms"} == {
        k: v for k, v in by_json["stats"].items() if k != "time_ms"
    }


def test_a_bad_compact_body_is_a_json_422_naming_the_field(service: ServiceProcess) -> None:
    body = encode_request({**REQUEST, "members": [*REQUEST["members"][:2], {"id": "c1", "topics": ["orders"]}]})
    answer = _post(service, "/v1/assign/consumer", body, COMPACT)
    assert answer.status_code == 422 and answer.headers["content-type"] == "application/json"
    assert answer.json()["field"] == "members[2].id"
    truncated = _post(service, "/v1/assign/consumer", encode_request(REQUEST)[:-7], COMPACT)
    assert truncated.status_code == 422 and truncated.json()["field"] == "body"
    owners = np.full(16, 5, dtype="<i4").tobytes()
    document = msgspec.msgpack.decode(encode_request(REQUEST)[len(MAGIC) :])
    wrong = MAGIC + msgspec.msgpack.encode({**document, "owners": owners})
    answer = _post(service, "/v1/assign/consumer", wrong, COMPACT)
    assert answer.status_code == 422 and answer.json()["field"] == "owners[0]", answer.text


def test_the_declared_encoding_must_be_the_bodys(service: ServiceProcess) -> None:
    as_json = _post(service, "/v1/assign/consumer", encode_request(REQUEST), {"content-type": "application/json"})
    assert as_json.status_code == 422 and as_json.json()["field"] == "body"
    as_compact = _post(service, "/v1/assign/consumer", json.dumps(REQUEST).encode(), COMPACT)
    assert as_compact.status_code == 422 and as_compact.json()["field"] == "body"
    streams = _post(service, "/v1/assign/streams", encode_request(REQUEST), COMPACT)
    assert streams.status_code == 415 and streams.json()["field"] == "content-type"


def test_the_python_client_may_ask_in_the_compact_encoding(service: ServiceProcess) -> None:
    with StickydClient(service.url) as client:
        compact = client.assign_consumer(REQUEST, compact=True)
        by_json = client.assign_consumer(REQUEST)
        assert compact.assignment == by_json.assignment
        assert compact.stats.moves == by_json.stats.moves and compact.stats.optimal
        with pytest.raises(StickydError) as refused:
            client.assign_consumer({**REQUEST, "topics": {"orders": -1, "payments": 4}}, compact=True)
    assert refused.value.status == 422 and refused.value.field == "topics[0].partitions"
