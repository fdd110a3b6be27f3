"""A live cluster's consumer groups as a fleet snapshot that `stickyd pipeline plan` reads.

`stickyd snapshot` writes, in its output folder:
    fleet.jsonl   one row per consumer group: {"group_id", "kind": "consumer", "problem"}, the problem
                  in the contract's format: partition counts of the topics the members subscribe to,
                  each member's subscription, current assignment (as `owned`), generation (classic:
                  as its subscription names it; KIP-848: the member epoch) and rack, the partitions'
                  replica racks where the brokers have racks, and the protocol (cooperative for
                  `cooperative-sticky` classic groups and for KIP-848 groups, else eager).
    lag.jsonl     one row per (group, topic, partition): committed offset, end offset, lag, owner,
                  and `rate`: records/s produced there between two readings of the end offsets
                  `--rate-window-s` apart (null with a window of 0, or where the end offset went
                  back: the topic was created again).
    groups.jsonl  what the coordinators said, per group: protocol, state, assignor, epoch and members
                  (client id, host, instance id, subscription, assignment, KIP-848 target).
"""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path
from typing import Any

from stickyd.client.cluster_reader import ClusterState, GroupState

COOPERATIVE_ASSIGNORS = ("cooperative-sticky",)


def group_problem(group: GroupState, state: ClusterState) -> dict[str, Any]:
    """The contract's consumer problem for a group as it stands now."""
    subscribed = sorted({t for m in group.members for t in m.subscription})
    topics = {t: state.partitions[t] for t in subscribed if t in state.partitions}
    members: list[dict[str, Any]] = []
    for m in sorted(group.members, key=lambda m: m.member_id):
        member: dict[str, Any] = {"id": m.member_id, "topics": list(m.subscription)}
        owned = {t: p for t, p in m.assignment.items() if t in state.partitions}
        if owned:
            member["owned"] = owned
        if m.generation is not None and m.generation >= 0:
            member["generation"] = m.generation
        if m.rack:
            member["rack"] = m.rack
        members.append(member)
    cooperative = group.protocol == "consumer" or group.assignor in COOPERATIVE_ASSIGNORS
    problem: dict[str, Any] = {
        "topics": topics,
        "members": members,
        "options": {"protocol": "cooperative" if cooperative else "eager"},
    }
    racks = {t: state.partition_racks[t] for t in topics if t in state.partition_racks}
    if racks and any(m.rack for m in group.members):
        problem["partition_racks"] = racks
    return problem


def fleet_rows(state: ClusterState) -> list[dict[str, Any]]:
    return [{"group_id": g.group_id, "kind": "consumer", "problem": group_problem(g, state)} for g in state.groups]


def lag_rows(state: ClusterState) -> list[dict[str, Any]]:
    owners = {
        (g.group_id, topic, p): m.member_id
        for g in state.groups
        for m in g.members
        for topic, parts in m.assignment.items()
        for p in parts
    }
    return [
        {
            "group_id": o.group_id,
            "topic": o.topic,
            "partition": o.partition,
            "committed_offset": o.committed,
            "end_offset": o.end,
            "lag": None if o.committed is None else max(o.end - o.committed, 0),
            "member": owners.get((o.group_id, o.topic, o.partition)),
            "rate": _rounded(state.rates.get((o.topic, o.partition))),
        }
        for o in state.offsets
    ]


def _rounded(rate: float | None) -> float | None:
    return None if rate is None else round(rate, 3)


def group_rows(state: ClusterState) -> list[dict[str, Any]]:
    return [asdict(g) for g in state.groups]


def write_snapshot(state: ClusterState, out: Path) -> dict[str, Path]:
    """fleet.jsonl, lag.jsonl and groups.jsonl under `out`; returns their paths."""
    out.mkdir(parents=True, exist_ok=True)
    files = {"fleet": fleet_rows(state), "lag": lag_rows(state), "groups": group_rows(state)}
    paths: dict[str, Path] = {}
    for name, rows in files.items():
        path = out / f"{name}.jsonl"
        path.write_text("".join(json.dumps(row, sort_keys=True) + "\n" for row in rows))
        paths[name] = path
    return paths
