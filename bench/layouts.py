"""Consumer groups whose previous assignment is laid out the way Kafka's own assignors leave it.

Benchmarks that start from contiguous blocks hide the cost of real claims: after Kafka's
round-robin or sticky assignor every member owns about one partition of each of hundreds of
topics. This module builds such groups as request JSON (docs/wire-format.md):

    from bench.layouts import kafka_like_problem, write_problem_json
    problem = kafka_like_problem(1_000_000, 2_000, layout="sticky", shape="equal", event="leave")
    write_problem_json(problem, "group.json")

    python -m bench.layouts 10000 1000 --layout roundrobin --event leave -o group.json

Layouts (`LAYOUTS`), all deterministic for a seed:
- `contiguous`: blocks of consecutive partitions (the old benchmark's shape, kept as one row);
- `roundrobin`: Kafka's RoundRobinAssignor (partitions sorted by topic then number, dealt over the
  sorted members, skipping those not subscribed), then a few percent of claims shuffled;
- `sticky`: round robin, then a history of members leaving (their partitions go one at a time
  to the least-loaded subscriber, as KIP-54 does) and joining (taking partitions from the most
  loaded), then shuffled noise;
- `range`: Kafka's RangeAssignor leftovers (per topic, contiguous ranges over the sorted
  subscribers, the first ones taking the remainders of every topic), then shuffled noise;
- `stale-dead`: `sticky`, plus members that missed a generation (they claim at the previous
  generation, partly partitions now owned by others), a few partitions claimed twice at the
  current generation, and members of the previous generation that died (their partitions are
  claimed by no one).
Then one event (`EVENTS`): a member leaves, a member joins, or partitions are added.
"""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

LAYOUTS = ("contiguous", "roundrobin", "sticky", "range", "stale-dead")
EVENTS = ("leave", "join", "partitions-added")
SHAPES = ("equal", "unequal")
GENERATION = 5
NOISE = 0.03
STALE_MEMBERS = 0.02
DEAD_MEMBERS = 0.01
TIED_CLAIMS = 0.001


@dataclass
class _Group:
    counts: np.ndarray
    """partitions per topic (topic t is named topic_name(t))."""
    subs: np.ndarray
    """bool (members, topics): who subscribes to what."""

    @property
    def offsets(self) -> np.ndarray:
        return np.concatenate([[0], np.cumsum(self.counts)]).astype(np.int64)

    @property
    def topic_of(self) -> np.ndarray:
        return np.repeat(np.arange(len(self.counts)), self.counts)

    def subscribers(self, t: int) -> np.ndarray:
        return np.flatnonzero(self.subs[:, t])

    def topics_of(self, m: int) -> list[int]:
        return np.flatnonzero(self.subs[m]).tolist()


def topic_name(t: int) -> str:
    return f"topic-{t:04d}"


def _topic_names(n: int) -> list[str]:
    return [topic_name(t) for t in range(n)]


def member_name(m: int) -> str:
    return f"consumer-{m:05d}"


def kafka_like_problem(
    partitions: int,
    members: int,
    *,
    layout: str = "sticky",
    shape: str = "equal",
    event: str = "leave",
    seed: int = 7,
) -> dict[str, Any]:
    """A contract request: `members` members after `event`, previous owners as `layout` leaves them.

    About `partitions` partitions over max(10, partitions // 2,000) topics. `shape` "unequal" gives
    every member a random subset of the topics (up to half of them).
    """
    if layout not in LAYOUTS or event not in EVENTS or shape not in SHAPES:
        raise ValueError(f"layout in {LAYOUTS}, event in {EVENTS}, shape in {SHAPES}")
    rng = np.random.default_rng(seed)
    n_topics = max(10, partitions // 2_000)
    counts = np.full(n_topics, max(1, partitions // n_topics), dtype=np.int64)
    dead = max(1, round(members * DEAD_MEMBERS)) if layout == "stale-dead" else 0
    # before the event: `members` members (one of them leaves) or `members - 1` (one joins)
    before = members + 1 if event == "leave" else members - 1 if event == "join" else members
    group = _Group(counts, _subscriptions(rng, before + dead, n_topics, shape))
    owner = _previous_owners(rng, group, layout)
    claim_member, claim_part = owner_claims(owner)
    generations = np.full(before + dead, GENERATION, dtype=np.int64)
    if layout == "stale-dead":
        claim_member, claim_part = _stale_and_tied(rng, group, owner, generations)
    alive = np.ones(before + dead, dtype=bool)
    alive[rng.choice(before + dead, size=dead, replace=False)] = False
    if event == "leave":
        alive[rng.choice(np.flatnonzero(alive))] = False
    names = _topic_names(n_topics)
    topics = {names[t]: int(n) for t, n in enumerate(counts)}
    if event == "partitions-added":
        for t in rng.choice(n_topics, size=max(1, n_topics // 10), replace=False):
            topics[topic_name(int(t))] += max(1, int(counts[t]) // 10)
    keep = alive[claim_member]
    owned = _owned_maps(group, claim_member[keep], claim_part[keep])
    out_members: list[dict[str, Any]] = []
    for m in np.flatnonzero(alive).tolist():
        entry: dict[str, Any] = {"id": member_name(m), "topics": [names[t] for t in group.topics_of(m)]}
        if m in owned:
            entry["owned"] = owned[m]
            entry["generation"] = int(generations[m])
        out_members.append(entry)
    if event == "join":
        join = np.ones(n_topics, dtype=bool) if shape == "equal" else _random_subset(rng, n_topics, n_topics // 4)
        out_members.append({"id": "consumer-new", "topics": [topic_name(t) for t in np.flatnonzero(join).tolist()]})
    return {"topics": topics, "members": out_members}


def owner_claims(owner: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(member, flat partition) of every owned partition."""
    parts = np.flatnonzero(owner >= 0)
    return owner[parts], parts


def contract_json_bytes(problem: dict[str, Any]) -> bytes:
    return json.dumps(problem, separators=(",", ":")).encode()


def write_problem_json(problem: dict[str, Any], path: str | Path) -> Path:
    """Write `problem` as contract JSON (compact) and return the path."""
    target = Path(path)
    target.write_bytes(contract_json_bytes(problem))
    return target


# --- subscriptions -------------------------------------------------------------------------------


def _random_subset(rng: np.random.Generator, n: int, size: int) -> np.ndarray:
    mask = np.zeros(n, dtype=bool)
    mask[rng.choice(n, size=max(1, size), replace=False)] = True
    return mask


def _subscriptions(rng: np.random.Generator, members: int, n_topics: int, shape: str) -> np.ndarray:
    if shape == "equal":
        return np.ones((members, n_topics), dtype=bool)
    subs = np.zeros((members, n_topics), dtype=bool)
    for m in range(members):
        subs[m] = _random_subset(rng, n_topics, int(rng.integers(1, max(1, n_topics // 2) + 1)))
    for t in np.flatnonzero(~subs.any(axis=0)).tolist():
        subs[rng.integers(members), t] = True
    return subs


# --- layouts -------------------------------------------------------------------------------------


def _previous_owners(rng: np.random.Generator, group: _Group, layout: str) -> np.ndarray:
    if layout == "contiguous":
        return _contiguous(group)
    if layout == "roundrobin":
        owner = _roundrobin(group)
    elif layout == "range":
        owner = _range(group)
    else:
        owner = _sticky_history(rng, group)
    _shuffle_noise(rng, group, owner, NOISE)
    return owner


def _roundrobin(group: _Group) -> np.ndarray:
    """Kafka's RoundRobinAssignor: one cursor over the sorted members, skipping non-subscribers."""
    owner = np.empty(int(group.counts.sum()), dtype=np.int64)
    cursor = 0
    for t, (start, n) in enumerate(zip(group.offsets[:-1].tolist(), group.counts.tolist(), strict=True)):
        subs = group.subscribers(t)
        first = int(np.searchsorted(subs, cursor)) % len(subs)
        owner[start : start + n] = subs[(first + np.arange(n)) % len(subs)]
        cursor = int(owner[start + n - 1]) + 1 if n else cursor
    return owner


def _range(group: _Group) -> np.ndarray:
    """Kafka's RangeAssignor: per topic, contiguous ranges; the first members take the remainders."""
    owner = np.empty(int(group.counts.sum()), dtype=np.int64)
    for t, (start, n) in enumerate(zip(group.offsets[:-1].tolist(), group.counts.tolist(), strict=True)):
        subs = group.subscribers(t)
        share, extra = divmod(n, len(subs))
        sizes = np.full(len(subs), share, dtype=np.int64)
        sizes[:extra] += 1
        owner[start : start + n] = np.repeat(subs, sizes)
    return owner


def _contiguous(group: _Group) -> np.ndarray:
    """Blocks of consecutive partitions, each topic split among its least-loaded subscribers."""
    owner = np.empty(int(group.counts.sum()), dtype=np.int64)
    members = group.subs.shape[0]
    load = np.zeros(members, dtype=np.int64)
    for t, (start, n) in enumerate(zip(group.offsets[:-1].tolist(), group.counts.tolist(), strict=True)):
        subs = group.subscribers(t)
        blocks = min(len(subs), max(1, -(-n * members // max(1, int(group.counts.sum())))))
        takers = subs[np.argsort(load[subs], kind="stable")[:blocks]]
        sizes = np.full(blocks, n // blocks, dtype=np.int64)
        sizes[: n % blocks] += 1
        owner[start : start + n] = np.repeat(takers, sizes)
        load[takers] += sizes
    return owner


def _sticky_history(rng: np.random.Generator, group: _Group) -> np.ndarray:
    """Round robin over a larger group, then members leave and join one at a time, KIP-54 style."""
    members = group.subs.shape[0]
    churn = max(2, members // 100)
    present = np.ones(members + churn, dtype=bool)
    subs = np.vstack([group.subs, group.subs[rng.choice(members, size=churn)]])
    late = rng.choice(members, size=churn, replace=False)
    present[late] = False
    owner = _roundrobin(_Group(group.counts, subs & present[:, None]))
    topic_of = group.topic_of
    load = np.bincount(owner, minlength=len(present)).astype(np.int64)
    for leaver, joiner in zip(range(members, members + churn), late.tolist(), strict=True):
        present[leaver] = False
        for p in np.flatnonzero(owner == leaver).tolist():
            takers = np.flatnonzero(subs[:, topic_of[p]] & present)
            m = int(takers[np.argmin(load[takers])])
            owner[p], load[m] = m, load[m] + 1
        load[leaver] = 0
        present[joiner] = True
        _steal_for(joiner, owner, load, subs[joiner][topic_of], int(present.sum()))
    return owner


def _steal_for(joiner: int, owner: np.ndarray, load: np.ndarray, readable: np.ndarray, members: int) -> None:
    """A joining member takes partitions it reads from the most-loaded owners, one at a time."""
    candidates = np.flatnonzero(readable)
    if not len(candidates):
        return
    candidates = candidates[np.argsort(owner[candidates], kind="stable")]
    held_by = owner[candidates]
    holders, starts, sizes = np.unique(held_by, return_index=True, return_counts=True)
    left = dict(zip(holders.tolist(), (starts + sizes).tolist(), strict=True))
    first = dict(zip(holders.tolist(), starts.tolist(), strict=True))
    target = len(owner) // members
    while load[joiner] < target and len(holders):
        m = int(holders[np.argmax(load[holders])])
        if load[m] <= load[joiner] + 1:
            break
        left[m] -= 1
        owner[candidates[left[m]]] = joiner
        load[m] -= 1
        load[joiner] += 1
        if left[m] == first[m]:
            holders = holders[holders != m]


def _shuffle_noise(rng: np.random.Generator, group: _Group, owner: np.ndarray, fraction: float) -> None:
    """A fraction of partitions handed to a random subscriber (manual moves, old reassignments)."""
    picked = np.sort(rng.choice(len(owner), size=int(len(owner) * fraction), replace=False))
    topic_of = group.topic_of[picked]
    for t in np.unique(topic_of).tolist():
        here = picked[topic_of == t]
        subs = group.subscribers(t)
        owner[here] = subs[rng.integers(0, len(subs), size=len(here))]


def _stale_and_tied(
    rng: np.random.Generator, group: _Group, owner: np.ndarray, generations: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Claims of members one generation behind (they also claim partitions now owned by others)
    and of partitions claimed twice at the current generation."""
    members = group.subs.shape[0]
    claim_member, claim_part = owner_claims(owner)
    stale = rng.choice(members, size=max(1, round(members * STALE_MEMBERS)), replace=False)
    generations[stale] = GENERATION - 1
    topic_of = group.topic_of
    extra_m, extra_p = [], []
    per_member = max(1, len(owner) // members // 4)
    for m in stale.tolist():
        readable = np.flatnonzero(group.subs[m][topic_of] & (owner != m))
        if len(readable):
            taken = rng.choice(readable, size=min(per_member, len(readable)), replace=False)
            extra_m.append(np.full(len(taken), m, dtype=np.int64))
            extra_p.append(taken)
    tied = rng.choice(len(owner), size=max(1, int(len(owner) * TIED_CLAIMS)), replace=False)
    fresh = np.setdiff1d(np.arange(members), stale)
    for p in tied.tolist():
        subs = np.intersect1d(group.subscribers(int(topic_of[p])), fresh)
        others = subs[subs != owner[p]]
        if len(others) and owner[p] not in stale:
            extra_m.append(np.array([rng.choice(others)], dtype=np.int64))
            extra_p.append(np.array([p], dtype=np.int64))
    if extra_m:
        more_m, more_p = np.concatenate(extra_m), np.concatenate(extra_p)
        claim_member = np.concatenate([claim_member, more_m])
        claim_part = np.concatenate([claim_part, more_p])
    return claim_member, claim_part


def _owned_maps(group: _Group, member: np.ndarray, part: np.ndarray) -> dict[int, dict[str, list[int]]]:
    """member -> {topic: sorted partition numbers} from flat claims."""
    order = np.lexsort((part, member))
    member, part = member[order], part[order]
    topic = group.topic_of[part]
    number = (part - group.offsets[topic]).tolist()
    key_change = np.flatnonzero((np.diff(member) != 0) | (np.diff(topic) != 0)) + 1
    starts = np.concatenate([[0], key_change]).tolist()
    ends = [*starts[1:], len(part)]
    members, topics = member.tolist(), topic.tolist()
    names = _topic_names(len(group.counts))
    owned: dict[int, dict[str, list[int]]] = {}
    for s, e in zip(starts, ends, strict=True):
        if s < e:
            owned.setdefault(members[s], {})[names[topics[s]]] = number[s:e]
    return owned


def main() -> None:
    parser = argparse.ArgumentParser(description="Write a Kafka-like consumer group as contract JSON.")
    parser.add_argument("partitions", type=int)
    parser.add_argument("members", type=int)
    parser.add_argument("--layout", choices=LAYOUTS, default="sticky")
    parser.add_argument("--shape", choices=SHAPES, default="equal")
    parser.add_argument("--event", choices=EVENTS, default="leave")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("-o", "--output", default="-", help="file to write, - for stdout")
    args = parser.parse_args()
    problem = kafka_like_problem(
        args.partitions, args.members, layout=args.layout, shape=args.shape, event=args.event, seed=args.seed
    )
    if args.output == "-":
        print(contract_json_bytes(problem).decode())
    else:
        write_problem_json(problem, args.output)


if __name__ == "__main__":
    main()
