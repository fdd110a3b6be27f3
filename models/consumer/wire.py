"""A consumer request's JSON bytes decoded for the service without a Python object per claimed
partition: msgspec decodes everything but the members' `owned` maps (left as their raw bytes),
which `stickyd.models.consumer.owned_bytes` reads straight into claim columns.

`decode_consumer` returns None whenever the body is anything but the plain common case (invalid
JSON, not an object, an unknown field, a backslash anywhere, a duplicated key, an `owned` map
that is not plainly claims, an integer msgspec refuses): the caller then takes the exact path
(`stickyd.service.http.json_guard.load_object_fast`, pydantic, `owned_columns`), so every 4xx stays as it
was. When it returns, `data` is what that path would have decoded, except that each member's
`owned` is an `OwnedJson` (a mapping decoded from its bytes only if someone reads it), and
`columns` are the claim columns `ConsumerProblem` would have made from the maps.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import msgspec
import numpy as np
import orjson
from msgspec import UNSET, UnsetType

from stickyd.models.consumer.owned import OwnedColumns
from stickyd.models.consumer.owned_bytes import owned_columns_from_json
from stickyd.models.consumer.problem import OWNED_COLUMNS_GIVEN


class _Member(msgspec.Struct, forbid_unknown_fields=True):
    id: Any = UNSET
    topics: msgspec.Raw | UnsetType = UNSET
    """as sent: members mostly send the same list, decoded once (`_shared_lists`)."""
    owned: msgspec.Raw | UnsetType = UNSET
    generation: Any = UNSET
    rack: Any = UNSET
    capacity: Any = UNSET


class _Request(msgspec.Struct, forbid_unknown_fields=True):
    topics: Any = UNSET
    members: list[_Member] | UnsetType = UNSET
    options: Any = UNSET
    copartitioned: Any = UNSET
    partition_racks: Any = UNSET
    partition_weights: Any = UNSET


_DECODER = msgspec.json.Decoder(_Request)


class OwnedJson(Mapping[str, list[int]]):
    """A member's `owned` map kept as the JSON bytes it was sent as; decoded on first read."""

    __slots__ = ("_decoded", "_raw")

    def __init__(self, raw: bytes) -> None:
        self._raw = raw
        self._decoded: dict[str, list[int]] | None = None

    def _map(self) -> dict[str, list[int]]:
        if self._decoded is None:
            self._decoded = orjson.loads(self._raw)
        return self._decoded

    def __getitem__(self, key: str) -> list[int]:
        return self._map()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._map())

    def __len__(self) -> int:
        return len(self._map())

    def __repr__(self) -> str:
        return repr(self._map())


@dataclass(frozen=True)
class WireRequest:
    data: dict[str, Any]
    columns: OwnedColumns

    @property
    def context(self) -> dict[str, Any]:
        """pydantic's validation context that hands `columns` to ConsumerProblem."""
        return {OWNED_COLUMNS_GIVEN: self.columns}


def decode_consumer(body: bytes) -> WireRequest | None:
    """The request and its claim columns, or None (take the exact path)."""
    if b"\\" in body:
        return None
    try:
        request = _DECODER.decode(body)
    except (msgspec.MsgspecError, ValueError, RecursionError):  # UnicodeDecodeError too
        return None
    data = {f: getattr(request, f) for f in _Request.__struct_fields__ if getattr(request, f) is not UNSET}
    topics = data.get("topics")
    if not isinstance(topics, dict) or isinstance(request.members, UnsetType):
        return None
    members: list[dict[str, Any]] = []
    raws: list[bytes] = []
    owners: list[int] = []
    subscriptions = _shared_lists(request.members)
    if subscriptions is None:
        return None
    for i, member in enumerate(request.members):
        # each field spelled out, in the order the exact path sees them: a 10k x 1,000 body decodes
        # in 5.6-5.7 against 6.9 ms with a comprehension over msgspec's astuple
        fields: dict[str, Any] = {}
        if member.id is not UNSET:
            fields["id"] = member.id
        if member.topics is not UNSET:
            fields["topics"] = subscriptions[i]
        if member.generation is not UNSET:
            fields["generation"] = member.generation
        if member.rack is not UNSET:
            fields["rack"] = member.rack
        if member.capacity is not UNSET:
            fields["capacity"] = member.capacity
        if not isinstance(member.owned, UnsetType):
            raw = bytes(member.owned)
            fields["owned"] = OwnedJson(raw)
            raws.append(raw)
            owners.append(i)
        members.append(fields)
    data["members"] = members
    if not _every_key_decoded(body, data, members, raws):
        return None  # a key given twice: the exact path names it
    position = {t: i for i, t in enumerate(sorted(topics))}
    columns = owned_columns_from_json(raws, np.array(owners, dtype=np.int64), position)
    return None if columns is None else WireRequest(data, columns)


def _shared_lists(members: list[_Member]) -> list[Any] | None:
    """Each member's `topics` decoded (None where not sent), the same bytes decoded once: equal
    text, equal value; None when msgspec refuses one (e.g. an integer beyond its range)."""
    decoded: dict[bytes, Any] = {}
    out: list[Any] = []
    try:
        for member in members:
            if isinstance(member.topics, UnsetType):
                out.append(None)
                continue
            raw = bytes(member.topics)
            value = decoded.get(raw)
            if value is None:
                value = decoded[raw] = msgspec.json.decode(raw)
            out.append(value)
    except (msgspec.MsgspecError, ValueError, RecursionError):
        return None
    return out


def _every_key_decoded(body: bytes, data: dict[str, Any], members: list[dict[str, Any]], raws: list[bytes]) -> bool:
    """Whether the body's `:` (one per key sent, plus those inside strings) are all accounted for
    by the keys decoded (a repeated key keeps only its last value), the colons inside decoded
    strings (no backslash: a string's text is its bytes) and those inside the `owned` bytes."""
    decoded = sum(_decoded_keys(v) for k, v in data.items() if k != "members") + len(data)
    decoded += sum(map(len, members))  # a member's values are not descended: nested keys undercount
    sent = body.count(b":") - sum(raw.count(b":") for raw in raws)  # no copy of the maps
    return decoded == sent or decoded + _colons_in_strings(data) == sent


def _colons_in_strings(value: Any) -> int:
    if isinstance(value, str):
        return value.count(":")
    if isinstance(value, dict):
        return _colons_in_strings(list(value)) + _colons_in_strings(list(value.values()))
    if isinstance(value, list):
        texts = [item for item in value if type(item) is str]
        nested = sum(_colons_in_strings(item) for item in value if isinstance(item, dict | list))
        return ":".join(texts).count(":") - max(len(texts) - 1, 0) + nested
    return 0


def _decoded_keys(value: Any) -> int:
    """Keys of every object in `value`; a member's `owned` counts one (its own keys are counted
    in its bytes)."""
    if isinstance(value, dict):
        return len(value) + sum(_decoded_keys(item) for item in value.values() if isinstance(item, dict | list))
    if isinstance(value, list) and value and isinstance(value[0], dict | list):
        return sum(_decoded_keys(item) for item in value)
    return 0
