"""The fast body decoder (orjson + a key count) answers exactly as the stdlib guard does: the same
dict for good bodies, the same 422 (field and reason) for duplicate keys anywhere, invalid JSON,
non-objects and integer literals beyond 64 bits, including with colons and escapes in strings."""

from __future__ import annotations

import pytest

from models.errors import ProblemError
from service.json_guard import load_object, load_object_fast

BODIES = [
    b'{"topics": {"t": 3}, "members": [{"id": "a", "topics": ["t"], "owned": {"t": [0, 1]}}]}',
    b'{"topics": {"t": 3, "t": 4}, "members": []}',
    b'{"members": [{"id": "a", "owned": {"t": [0], "t": [1]}}]}',
    b'{"members": [{"id": "a", "id": "b"}]}',
    b'{"members": [{"id": "host:9092", "topics": ["t:1"]}], "topics": {"t:1": 2}}',
    b'{"members": [{"id": "a\\"b:c", "topics": []}], "topics": {"x": 1, "x": 2}}',
    b'{"members": [{"id": "a\\\\", "topics": []}], "topics": {"x": 1}}',
    b'{"options": {"strategy": "optimal", "strategy": "sticky"}}',
    b'{"members": [[{"a": 1, "a": 2}]]}',
    b'{"members": [1, {"a": 1, "a": 2}]}',
    b'{"members": {"owned": {"t": [{"x": 1, "x": 2}]}}}',
    b'{"n": 123456789012345678901234567890}',
    b'{"n": NaN}',
    b"[1, 2]",
    b'"text"',
    b"{not json",
    b'{"a": "\xff"}',
    b"",
]


def _outcome(load: object, body: bytes) -> object:
    try:
        return ("ok", load(body))  # type: ignore[operator]
    except ProblemError as problem:
        return ("422", problem.field, problem.reason)


@pytest.mark.parametrize("body", BODIES)
def test_fast_decoder_matches_the_stdlib_guard(body: bytes) -> None:
    assert _outcome(load_object_fast, body) == _outcome(load_object, body)
