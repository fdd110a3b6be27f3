"""The fast body decoder (orjson + a key count) answers exactly as the stdlib guard does: the same
dict for good bodies, the same 422 (field and reason) for duplicate keys anywhere, invalid JSON,
non-objects and integer literals beyond 64 bits, including with colons and escapes in strings."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stickyd.models.errors import ProblemError
from stickyd.service.http.json_guard import load_object, load_object_fast

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


KEYS = st.sampled_from(["a", "b", "t:1", "host:9092", "é:", "x"])
SCALARS = st.one_of(st.integers(-(2**63), 2**63 - 1), st.booleans(), st.none(), st.text(alphabet="ab:é ", max_size=4))


def _text(value: object) -> str:
    """JSON text for a value whose objects are lists of (key, value) pairs: keys may repeat."""
    if isinstance(value, tuple) and value and value[0] == "object":
        return "{" + ", ".join(f"{json.dumps(k, ensure_ascii=False)}: {_text(v)}" for k, v in value[1]) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(_text(v) for v in value) + "]"
    return json.dumps(value, ensure_ascii=False)


VALUES = st.recursive(
    SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3),
        st.tuples(st.just("object"), st.lists(st.tuples(KEYS, inner), max_size=4)),
    ),
    max_leaves=12,
)


@settings(max_examples=300, deadline=None)
@given(pairs=st.lists(st.tuples(KEYS, VALUES), max_size=5))
def test_fast_decoder_matches_the_stdlib_guard_on_generated_objects_with_repeated_keys(
    pairs: list[tuple[str, object]],
) -> None:
    """Random objects, keys repeated anywhere (colons and non-ASCII in keys and strings): the fast
    decoder refuses exactly what the stdlib guard refuses, with the same field and reason."""
    body = _text(("object", pairs)).encode()
    assert _outcome(load_object_fast, body) == _outcome(load_object, body)
