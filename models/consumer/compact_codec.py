"""The client's half of the compact encoding (docs/wire-format.md, "The compact encoding"): a
contract request (the JSON document as a dict) written as a compact body, and a compact answer read
back into the contract's answer document. Used by Python clients, the tests and the benchmarks;
the JVM plug-in has its own (plugins/kafka, CompactConsumerRequest and CompactConsumerAnswer).
"""

from __future__ import annotations

from typing import Any

import msgspec
import numpy as np

from stickyd.models.consumer.compact import MAGIC


def encode_request(request: dict[str, Any]) -> bytes:
    """`request` (the contract's consumer request) as a compact body. A claim on a topic the
    request does not list, or past its partition count, is left out (the service ignores such
    claims in JSON requests)."""
    names = list(request["topics"])
    topic_at = {t: i for i, t in enumerate(names)}
    subscriptions: dict[tuple[int, ...], int] = {}
    members: list[list[Any]] = []
    runs: list[tuple[int, int, int, int]] = []
    counts = [max(request["topics"][t], 0) for t in names]  # a negative count is the service's to name
    offsets = np.concatenate([[0], np.cumsum(counts, dtype=np.int64)]).astype(np.int64)
    owners = np.full(int(offsets[-1]), -1, dtype="<i4")
    for m, member in enumerate(request["members"]):
        subscribed = tuple(topic_at[t] for t in member["topics"] if t in topic_at)
        index = subscriptions.setdefault(subscribed, len(subscriptions))
        row: list[Any] = [member["id"], index, member.get("generation", -1), member.get("rack"), member.get("capacity")]
        while len(row) > 2 and row[-1] is None:
            row.pop()
        members.append(row)
        for topic, parts in (member.get("owned") or {}).items():
            if topic in topic_at:
                t = topic_at[topic]
                listed = np.unique(np.array([p for p in parts if 0 <= p < counts[t]], dtype=np.int64))
                flat = offsets[t] + listed
                free = owners[flat] == -1  # the first claimant in the dense array, the others as runs
                owners[flat[free]] = m
                runs += _runs(m, t, listed[~free].tolist())
    document: dict[str, Any] = {
        "topics": [[t, request["topics"][t]] for t in names],
        "subscriptions": [list(s) for s in subscriptions],
        "members": members,
        "owned": np.array(runs, dtype="<i4").reshape(-1, 4).tobytes(),
        "owners": owners.tobytes(),
    }
    for field in ("options", "copartitioned", "partition_racks", "partition_weights"):
        if field in request:
            document[field] = request[field]
    return MAGIC + msgspec.msgpack.encode(document)


def _runs(member: int, topic: int, parts: list[int]) -> list[tuple[int, int, int, int]]:
    out: list[tuple[int, int, int, int]] = []
    for p in parts:
        if out and out[-1][2] + out[-1][3] == p:
            out[-1] = (member, topic, out[-1][2], out[-1][3] + 1)
        else:
            out.append((member, topic, p, 1))
    return out


def decode_answer(body: bytes, request: dict[str, Any]) -> dict[str, Any]:
    """A compact answer to `request` as the contract's answer document (an unchanged member gets
    the partitions it claimed; partition lists sorted)."""
    if body[: len(MAGIC)] != MAGIC:
        raise ValueError("not a compact answer")
    answer = msgspec.msgpack.decode(body[len(MAGIC) :])
    ids = [m["id"] for m in request["members"]]
    names = list(request["topics"])
    counts = list(request["topics"].values())
    assignment = _dense_maps(answer["assignment"], ids, names, counts)
    for m in answer["unchanged"]:
        owned = request["members"][m].get("owned") or {}
        assignment[ids[m]] = {t: sorted(set(p)) for t, p in owned.items() if p}
    free = _maps(answer["unassigned"], [""], names, nobody=True)[""]
    target = None if answer["target"] is None else _dense_maps(answer["target"], ids, names, counts)
    return {
        "assignment": assignment,
        "revoke": _maps(answer["revoke"], ids, names) if answer["revoke"] else {},
        "target": target,
        "unassigned": free,
        "stats": answer["stats"],
    }


def _dense_maps(owners: bytes, ids: list[str], names: list[str], counts: list[int]) -> dict[str, dict[str, list[int]]]:
    out: dict[str, dict[str, list[int]]] = {member_id: {} for member_id in ids}
    owner = np.frombuffer(owners, dtype="<i4")
    at = 0
    for name, count in zip(names, counts, strict=True):
        for p, m in enumerate(owner[at : at + count].tolist()):
            if m >= 0:
                out[ids[m]].setdefault(name, []).append(p)
        at += count
    return out


def _maps(runs: bytes, ids: list[str], names: list[str], nobody: bool = False) -> dict[str, dict[str, list[int]]]:
    out: dict[str, dict[str, list[int]]] = {member_id: {} for member_id in ids}
    for member, topic, first, count in np.frombuffer(runs, dtype="<i4").reshape(-1, 4).tolist():
        parts = out[ids[0 if nobody else member]].setdefault(names[topic], [])
        parts += range(first, first + count)
    for per_topic in out.values():
        for parts in per_topic.values():
            parts.sort()
    return out
