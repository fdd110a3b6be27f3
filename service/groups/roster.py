"""Who is in a group this round, compared with the last one (the leader's memory of incremental
cooperative rebalancing, KIP-429 / KIP-441).

Shared by consumer groups and Streams applications: newcomers, members returning within
their grace, members that vanished (held for the grace, or gone), and members leaving on
purpose. Works on the raw request so that a malformed member is left for the contract's own
validation to name.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


class RosterError(ValueError):
    """A group request that names members wrongly: `field` says where."""

    def __init__(self, field: str, reason: str) -> None:
        super().__init__(f"{field}: {reason}")
        self.field = field
        self.reason = reason


def member_ids(entries: Any) -> list[str]:
    """The string ids of a raw members/clients list (anything else is the contract's to refuse)."""
    if not isinstance(entries, list):
        return []
    return [e["id"] for e in entries if isinstance(e, dict) and isinstance(e.get("id"), str)]


@dataclass
class Roster:
    present: list[str]
    """members of this round, in request order."""
    newcomers: list[str]
    returning: list[str]
    """back within their grace: they get what was held for them."""
    leaving: list[str]
    """present and marked leaving: they get nothing new and are drained."""
    held: dict[str, dict[str, Any]]
    """vanished without leaving, still within the grace: id -> {since, until, member, owned}."""
    expired: list[str]
    """grace ran out this round: their work is reassigned now."""
    departed: list[str] = field(default_factory=list)
    """left (planned, or vanished with no grace): forgotten."""

    def report(self, leaving: list[dict[str, Any]], held_now: dict[str, dict[str, Any]]) -> dict[str, Any]:
        """The rebalance answer's account of the round: `leaving` as `[{id, empty}]`, `held_now` what
        each held member keeps for its grace (id -> {since, until, owned})."""
        return {
            "newcomers": self.newcomers,
            "returning": self.returning,
            "leaving": leaving,
            "held": [
                {"id": m, "since": h["since"], "until": h["until"], "assignment": h["owned"]}
                for m, h in held_now.items()
            ],
            "reassigned": self.expired,
            "departed": self.departed,
        }


def build_roster(
    state: dict[str, Any], present: list[str], leaving_asked: list[str], grace_ms: int, now: float
) -> Roster:
    """Compare this round's members with the stored state. Raises RosterError for a leaving
    member that is not in the group."""
    known: dict[str, Any] = state.get("members", {})
    lost: dict[str, dict[str, Any]] = state.get("lost", {})
    here = set(present)
    for i, member in enumerate(leaving_asked):
        if member not in here and member not in known:
            raise RosterError(f"leaving[{i}]", f"member {member!r} is not in the group")
    leaving_all = set(state.get("leaving", [])) | set(leaving_asked)
    held: dict[str, dict[str, Any]] = {}
    expired: list[str] = []
    for member, entry in sorted(lost.items()):
        if member in here:
            continue
        if entry["until"] > now:
            held[member] = entry
        else:
            expired.append(member)
    departed: list[str] = []
    assignment = state.get("assignment", {})
    for member in sorted(known):
        if member in here:
            continue
        if grace_ms > 0 and member not in leaving_all:
            held[member] = {
                "since": now,
                "until": now + grace_ms / 1000,
                "member": known[member],
                "owned": assignment.get(member, {}),
            }
        else:
            departed.append(member)
    return Roster(
        present=present,
        newcomers=[m for m in present if m not in known and m not in lost],
        returning=[m for m in present if m in lost],
        leaving=[m for m in present if m in leaving_all],
        held=held,
        expired=expired,
        departed=departed,
    )
