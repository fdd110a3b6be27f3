"""JSON bytes to a dict, refusing what a hostile client may send with a 422 that names the place:
invalid JSON, a non-object body, duplicate keys (silently keeping the last would hide the
client's mistake), nesting deeper than the parser allows, and integers too long to convert.

Integers beyond int64 are refused by the contract's models (models/int64.py), which name the field.
"""

from __future__ import annotations

import json
from typing import Any

from models.errors import ProblemError


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
