"""JSON bytes to a dict, refusing what a hostile client may send with a 422 that names the place:
invalid JSON, a non-object body, duplicate keys (silently keeping the last would hide the
client's mistake), nesting deeper than the parser allows, and integers too long to convert.

Integers beyond int64 are refused by the contract's models (models/int64.py), which name the field.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import orjson

from stickyd.models.errors import ProblemError

DIGITS_AS_ZERO = bytes.maketrans(b"123456789", b"000000000")
LONG_NUMBER = b"0" * 20
"""orjson turns integer literals beyond 64 bits into floats: such bodies go to the exact parser."""
UNDESCENDED = frozenset({"owned"})
"""keys whose object's own keys are counted but whose values (lists of numbers) are not walked."""


class _DuplicateKey(ValueError):
    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object's members as a dict; raises on a key given twice."""
    result = dict(pairs)
    if len(result) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise _DuplicateKey(key)
            seen.add(key)
    return result


def load_object(body: bytes) -> dict[str, Any]:
    """The body as a JSON object; raises ProblemError (field `body`, or the duplicated key)."""
    try:
        data = json.loads(body, object_pairs_hook=_unique_keys)
    except _DuplicateKey as duplicate:
        raise ProblemError(duplicate.key, "duplicate key in one JSON object (each key may appear once)") from None
    except RecursionError:
        raise ProblemError("body", "JSON nested too deeply (the contract needs at most 6 levels)") from None
    except json.JSONDecodeError as problem:
        where = f"line {problem.lineno} column {problem.colno}"
        raise ProblemError("body", f"not valid JSON ({problem.msg} at {where})") from None
    except UnicodeDecodeError:
        raise ProblemError("body", "not valid JSON (the body is not UTF-8)") from None
    except ValueError as problem:  # e.g. an integer literal of thousands of digits
        raise ProblemError("body", f"not valid JSON ({problem})") from None
    if not isinstance(data, dict):
        raise ProblemError("body", f"expected a JSON object, got {type(data).__name__}")
    return data


def load_object_fast(body: bytes) -> dict[str, Any]:
    """`load_object`, decoded by orjson when the body is an object without duplicate keys (the
    common case, about twice as fast); anything else goes through `load_object` for its exact
    answer. Duplicates: orjson keeps a repeated key's last value silently, so the decoded object
    must give back every `:` of the body (`_no_pair_dropped`), or, with backslashes in it, the
    number of keys decoded must equal the number of `:` outside strings in the bytes."""
    if LONG_NUMBER in body.translate(DIGITS_AS_ZERO):
        return load_object(body)
    try:
        data = orjson.loads(body)
    except orjson.JSONDecodeError:
        return load_object(body)
    if not isinstance(data, dict):
        return load_object(body)
    if b"\\" not in body and _no_pair_dropped(body, data):
        return data
    keys = _decoded_keys(data)
    if body.count(b":") == keys or _colons_outside_strings(body) == keys:
        return data
    return load_object(body)


def _no_pair_dropped(body: bytes, data: dict[str, Any]) -> bool:
    """Whether decoding kept every key of a body without backslashes. Without them every string
    is written back byte for byte, so encoding the decoded object again gives every `:` of the
    body back, unless a repeated key's earlier pair (its own `:` at least) was dropped. About a
    quarter of the cost of counting the decoded keys in Python (a 5 MB Streams body: 7 against
    25 ms)."""
    try:
        return body.count(b":") == orjson.dumps(data).count(b":")
    except orjson.JSONEncodeError:
        return False


def _decoded_keys(value: Any) -> int:
    """Keys of every object in `value` (an undercount is safe: it only sends the body to the
    exact parser): objects under UNDESCENDED keys count their keys, not their values' keys."""
    if isinstance(value, dict):
        total = len(value)
        for key, item in value.items():
            if key in UNDESCENDED and isinstance(item, dict):
                total += len(item)
            elif isinstance(item, dict | list):
                total += _decoded_keys(item)
        return total
    if isinstance(value, list) and value and isinstance(value[0], dict | list):
        return sum(_decoded_keys(item) for item in value)
    return 0


def _colons_outside_strings(body: bytes) -> int:
    """Name separators of a valid JSON text; -1 (never a key count) when it has backslashes,
    which would need escape-aware string bounds."""
    if b"\\" in body:
        return -1
    text = np.frombuffer(body, dtype=np.uint8)
    inside = np.cumsum(text == ord('"'), dtype=np.uint8) & 1
    return int(np.count_nonzero((text == ord(":")) & (inside == 0)))
