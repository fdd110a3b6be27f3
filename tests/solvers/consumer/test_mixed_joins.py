"""Consumer groups where a member's units weigh differently (it reads a co-partitioned join,
2 partitions per unit, beside plain topics, 1 per unit): proven optimal without running out of
time, and equal to the exact reference level by level whenever `optimal` is claimed."""

from __future__ import annotations

import random
import time
from typing import Any

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from stickyd.models.consumer.index import index_consumer_problem
from stickyd.models.consumer.problem import ConsumerProblem
from stickyd.models.consumer.validation import unit_violations
from stickyd.solvers import solve_consumer
from stickyd.solvers.consumer.kip54_sticky import solve_sticky
from stickyd.solvers.consumer.mixed.cpsat import moves_of
from stickyd.solvers.consumer.mixed.same_counts import fewest_moves_same_counts
from tests.conftest import assert_valid
from tests.solvers.consumer.reference import reference_objective
from tests.solvers.consumer.test_properties import _rack_misses


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
    """300 members each reading 40 of 200 topics plus two co-partitioned pairs: the split
    relaxation (a flow) proves the KIP-54 loads even and the answer optimal, without a fallback."""
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


def left_right_join(
    draw: st.DrawFn, topics: dict[str, int], members: list[dict[str, Any]], owned: dict[str, dict[str, list[int]]]
) -> dict[str, Any]:
    """The request of a group where `left` and `right` are co-partitioned: each member's claims
    from `owned`, and replicas on racks now and then."""
    for member in members:
        member["owned"] = owned.get(member["id"], {})
    problem: dict[str, Any] = {"topics": topics, "members": members, "copartitioned": [["left", "right"]]}
    if draw(st.booleans()):
        problem["partition_racks"] = {
            t: [[draw(st.sampled_from(["r1", "r2"]))] for _ in range(n)] for t, n in topics.items()
        }
    return problem


@st.composite
def joins_with_a_member_per_unit(draw: st.DrawFn) -> dict[str, Any]:
    """Mixed weights with at least as many members as units (the usual stream-join group): a
    join and a plain topic, cohorts reading either or both, claims left by a round robin over
    present and departed members, replicas on racks now and then."""
    join = draw(st.integers(1, 3))
    topics = {"left": join, "right": join, "plain": draw(st.integers(1, 3))}
    cohorts = [["left", "plain", "right"], ["left", "right"], ["plain"]]
    count = draw(st.integers(join + topics["plain"], join + topics["plain"] + 3))
    members: list[dict[str, Any]] = [
        {"id": f"m{j}", "topics": draw(st.sampled_from(cohorts)), "rack": draw(st.sampled_from(["r1", "r2"]))}
        for j in range(count)
    ]
    owners: list[str] = draw(st.lists(st.sampled_from([m["id"] for m in members] + ["gone"]), min_size=1, max_size=4))
    owned: dict[str, dict[str, list[int]]] = {}
    for topic, partitions in topics.items():
        for p in range(partitions):
            owned.setdefault(owners[(p + draw(st.integers(0, 1))) % len(owners)], {}).setdefault(topic, []).append(p)
    return left_right_join(draw, topics, members, owned)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(joins_with_a_member_per_unit())
def test_a_member_per_unit_is_proven_by_the_flow_and_equals_the_reference(problem: dict[str, Any]) -> None:
    """When every member can take at most one unit (solvers/consumer/mixed/one_each.py), balance,
    moves and rack misses equal the exact reference and no fallback is needed."""
    solution = solve_consumer(problem)
    assert_valid(problem, solution)
    assert solution.stats.optimal and not solution.stats.fallback, solution.stats.warnings
    want = reference_objective(problem)
    loads = [sum(len(parts) for parts in owned.values()) for owned in solution.assignment.values()]
    assert sum(x * x for x in loads) == want["squares"]
    assert solution.stats.moves == want["moves"]
    assert _rack_misses(problem, solution) == want["racks"]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mixed_weight_groups())
def test_same_counts_flow_keeps_every_members_units_per_weight_and_moves_no_more(problem: dict[str, Any]) -> None:
    """solvers/consumer/mixed/same_counts.py: from the KIP-54 answer, a valid assignment where every
    member has as many units of each weight (so the same loads) and no more moves."""
    index = index_consumer_problem(ConsumerProblem.model_validate(problem))
    start = solve_sticky(index)
    better = fewest_moves_same_counts(index, start, time.monotonic() + 10)
    assert unit_violations(index, better) == []

    def per_weight(owners: list[np.ndarray]) -> dict[int, list[int]]:
        out: dict[int, list[int]] = {}
        for group, owner in zip(index.groups, owners, strict=True):
            counts = np.bincount(owner[owner >= 0], minlength=index.member_count).tolist()
            out[group.weight] = [a + b for a, b in zip(out.get(group.weight, [0] * len(counts)), counts, strict=True)]
        return out

    assert per_weight(better) == per_weight(start)
    assert moves_of(index, better) <= moves_of(index, start)
