"""Consumer groups where a member's units weigh differently (it reads a co-partitioned join,
2 partitions per unit, beside plain topics, 1 per unit): proven optimal without running out of
time, and equal to the exact reference level by level whenever `optimal` is claimed."""

from __future__ import annotations

import random
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from solvers import solve_consumer
from tests.conftest import assert_valid
from tests.solvers.reference_consumer import reference_objective


def mixed_join_group(members: int, topics: int, reads: int, pairs: int, seed: int = 17) -> dict[str, Any]:
    """Every member reads `reads` of `topics` plain topics plus every joined pair (KIP-315)."""
    rng = random.Random(seed)
    counts = {f"topic-{i:03d}": rng.choice((12, 16, 24, 32)) for i in range(topics)}
    plain = sorted(counts)
    joins = [[f"join-{k}-left", f"join-{k}-right"] for k in range(pairs)]
    for pair in joins:
        counts.update(dict.fromkeys(pair, rng.choice((16, 24, 32))))
    group = [
        {"id": f"consumer-{j:03d}", "topics": sorted(rng.sample(plain, reads)) + [t for pair in joins for t in pair]}
        for j in range(members)
    ]
    return {"topics": counts, "members": group, "copartitioned": joins}


def test_the_issues_300_member_join_group_is_proven_without_a_fallback() -> None:
    """Issue 17's case: 300 members each reading 40 of 200 topics plus two co-partitioned pairs
    fell back after 9.3 s; the split relaxation (a flow) now proves the KIP-54 loads even and
    the answer optimal."""
    problem = mixed_join_group(300, 200, 40, 2)
    solution = solve_consumer(problem)
    assert_valid(problem, solution)
    assert (solution.stats.optimal, solution.stats.fallback) == (True, False), solution.stats.warnings
    assert solution.stats.max_load - solution.stats.min_load <= 1


@st.composite
def mixed_weight_groups(draw: st.DrawFn) -> dict[str, Any]:
    """A join (two co-partitioned topics) and one or two plain topics; cohorts of members read
    the join, the plain topics or both; previous owners from a round robin over some of them."""
    join = draw(st.integers(1, 5))
    extra = draw(st.integers(1, 2))
    topics = {"left": join, "right": join} | {f"plain{i}": draw(st.integers(1, 6)) for i in range(extra)}
    plain = [t for t in topics if t.startswith("plain")]
    cohorts = [["left", "right", *plain], ["left", "right"], plain, ["left", "right", plain[0]]]
    members: list[dict[str, Any]] = []
    owned: dict[str, dict[str, list[int]]] = {}
    for j in range(draw(st.integers(2, 5))):
        owned[f"m{j}"] = {}
        members.append({"id": f"m{j}", "topics": draw(st.sampled_from(cohorts)), "owned": owned[f"m{j}"]})
    claimants = draw(st.lists(st.sampled_from([m["id"] for m in members]), min_size=1, max_size=4))
    offset = draw(st.integers(0, 3))
    for topic, count in topics.items():
        for p in range(count):
            owner = claimants[(p + offset) % len(claimants)]
            owned[owner].setdefault(topic, []).append(p)
    return {"topics": topics, "members": members, "copartitioned": [["left", "right"]]}


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mixed_weight_groups())
def test_mixed_weight_groups_are_proven_and_equal_the_reference(problem: dict[str, Any]) -> None:
    """Whenever `optimal` is claimed, balance, moves and racks equal the exact reference; and
    these small groups are always proven (no fallback)."""
    solution = solve_consumer(problem)
    assert_valid(problem, solution)
    assert solution.stats.optimal and not solution.stats.fallback, solution.stats.warnings
    want = reference_objective(problem)
    assignment = solution.assignment
    loads = [sum(len(parts) for parts in owned.values()) for owned in assignment.values()]
    assert sum(x * x for x in loads) == want["squares"]
    assert solution.stats.moves == want["moves"]
