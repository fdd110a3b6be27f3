"""An independent, deliberately plain exact reference for balance `per_topic` and `load`.

Every assignment of units to eligible members is enumerated (tiny groups only) and the levels of
docs/wire-format.md ("What balanced means") are applied in turn with exact fractions. Reads the
request dict itself; shares no code with models/ or solvers/ (claims are resolved by the count
reference's plain `resolve_claims`).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from tests.solvers.consumer.reference import resolve_claims


@dataclass(frozen=True)
class Candidate:
    loads: dict[str, int]
    """partitions per member."""
    weights: dict[str, int]
    """W per member."""
    kept: int
    misses: int
    """partitions read from a rack holding no replica of them (KIP-881)."""


def candidates(problem: dict[str, Any]) -> tuple[list[Candidate], list[list[str]], list[dict[str, Any]], int]:
    """(every valid assignment's figures, per unit its eligible members in enumeration order,
    the units, claims that count as owned)."""
    topics: dict[str, int] = problem["topics"]
    members = problem["members"]
    subs = {m["id"]: {t for t in m["topics"] if t in topics} for m in members}
    subscribed = set().union(*subs.values())
    joined = [sorted(set(g)) for g in problem.get("copartitioned", [])]
    in_join = {t for g in joined for t in g}
    groups = joined + [[t] for t in sorted(subscribed - in_join)]
    weight = reference_weights(problem)
    owner = resolve_claims(problem)
    racks = problem.get("partition_racks", {})
    rack_of = {m["id"]: m.get("rack") for m in members}
    units: list[dict[str, Any]] = []
    for group in groups:
        live = [t for t in group if t in subscribed]
        if not live:
            continue
        reads = {m: [t for t in live if t in s] for m, s in subs.items()}
        most = max(len(r) for r in reads.values())
        eligible = sorted(m for m, r in reads.items() if len(r) == most and most > 0)
        for p in range(min(topics[t] for t in group)):
            units.append({"group": tuple(live), "shape": tuple(group), "p": p, "eligible": eligible, "reads": reads})
    owned = sum(1 for (t, p) in owner if any(t in u["group"] and p == u["p"] for u in units))
    out = []
    for choice in itertools.product(*(u["eligible"] for u in units)):
        loads = {m: 0 for m in subs}
        weights = {m: 0 for m in subs}
        kept = misses = 0
        for unit, m in zip(units, choice, strict=True):
            for t in unit["reads"][m]:
                loads[m] += 1
                weights[m] += weight[t][unit["p"]]
                kept += owner.get((t, unit["p"])) == m
                held = racks.get(t, [[]] * topics[t])[unit["p"]]
                misses += bool(rack_of[m] is not None and held and rack_of[m] not in held)
        out.append(Candidate(loads, weights, kept, misses))
    return out, [u["eligible"] for u in units], units, owned


def reference_weights(problem: dict[str, Any]) -> dict[str, list[int]]:
    given = problem.get("partition_weights") or {}
    lists = {t: (w if isinstance(w, list) else [w] * problem["topics"][t]) for t, w in given.items()}
    count = sum(len(w) for w in lists.values())
    mean = sum(sum(w) for w in lists.values()) // count if count else 1
    return {t: lists.get(t, [mean] * n) for t, n in problem["topics"].items()}


def load_reference(problem: dict[str, Any]) -> dict[str, Any]:
    """L*, the level-2 moves, level 3 (the bottleneck, then the sum of W^2 / c) and the off-rack
    partitions after it, of balance `load`, as exact fractions."""
    options = problem.get("options", {})
    tolerance = Fraction(repr(float(options.get("load_tolerance", 0.05))))
    capacity = {m["id"]: m.get("capacity", 1) for m in problem["members"]}
    found, _, _, owned = candidates(problem)

    def bottleneck(c: Candidate) -> Fraction:
        return max(Fraction(w, capacity[m]) for m, w in c.weights.items())

    best = min(bottleneck(c) for c in found)
    within = [c for c in found if bottleneck(c) <= (1 + tolerance) * best]
    kept = max(c.kept for c in within)
    sticky = [c for c in within if c.kept == kept]
    even = min(bottleneck(c) for c in sticky)

    def spread(c: Candidate) -> Fraction:
        return sum((Fraction(w * w, capacity[m]) for m, w in c.weights.items()), Fraction(0))

    flattest = min(spread(c) for c in sticky if bottleneck(c) == even)
    racks = min(c.misses for c in sticky if bottleneck(c) == even and spread(c) == flattest)
    return {
        "bottleneck": best,
        "moves": owned - kept,
        "even_bottleneck": even,
        "spread": flattest,
        "racks": racks,
    }


def per_topic_reference(problem: dict[str, Any]) -> dict[str, int]:
    """The sum of squared loads, the moves and the off-rack partitions of balance `per_topic`."""
    found, eligible, units, owned = candidates(problem)
    spread = []
    for c, choice in zip(found, itertools.product(*eligible), strict=True):
        fair = True
        for group in {u["group"] for u in units}:
            here = [m for u, m in zip(units, choice, strict=True) if u["group"] == group]
            takers = next(u["eligible"] for u in units if u["group"] == group)
            low, high = len(here) // len(takers), -(-len(here) // len(takers))
            if any(not low <= here.count(m) <= high for m in takers):
                fair = False
        if fair:
            spread.append(c)
    squares = min(sum(v * v for v in c.loads.values()) for c in spread)
    even = [c for c in spread if sum(v * v for v in c.loads.values()) == squares]
    kept = max(c.kept for c in even)
    misses = min(c.misses for c in even if c.kept == kept)
    return {"squares": squares, "moves": owned - kept, "racks": misses}
