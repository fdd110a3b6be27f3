"""Balance `per_topic` and `load` (docs/wire-format.md, "What balanced means") against an independent
brute-force reference on tiny random groups, the contract's examples, and the bounds' soundness."""

from __future__ import annotations

import json
import math
from fractions import Fraction
from pathlib import Path
from typing import Any
from unittest.mock import patch

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from stickyd.solvers import solve_consumer
from stickyd.solvers.consumer.load import solve as balanced_solve
from stickyd.solvers.consumer.load.per_topic_extras import solve_per_topic_extras
from stickyd.solvers.consumer.load.per_topic_flow import _keep_lowest
from tests.conftest import assert_valid, expected, load_example
from tests.solvers.consumer.load.balance_reference import (
    candidates,
    load_reference,
    per_topic_reference,
    reference_weights,
)

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
EXAMPLES = Path(__file__).resolve().parents[4] / "service" / "examples"

weights = st.one_of(
    st.integers(0, 10),
    st.integers(0, 10**12),
    st.sampled_from([0, 1, 10**12]),
)
capacities = st.one_of(st.none(), st.integers(1, 4), st.integers(1, 10**6), st.just(10**6))
tolerances = st.one_of(st.sampled_from([0, 0.05, 0.5, 1]), st.floats(0, 1, allow_nan=False))


@st.composite
def groups(draw: st.DrawFn, balance: str) -> dict[str, Any]:
    """2-3 members, 1-3 topics of 1-3 partitions (at most 7 units), sometimes a co-partitioned
    pair, random claims over two generations, weights, capacities and tolerance, eager or
    cooperative (KIP-429: moves are counted on the target)."""
    names = [f"t{i}" for i in range(draw(st.integers(1, 3)))]
    topics = {t: draw(st.integers(1, 3)) for t in names}
    assume(sum(topics.values()) <= 7)
    members = []
    for i in range(draw(st.integers(2, 3))):
        subscribed = draw(st.lists(st.sampled_from(names), min_size=1, unique=True))
        owned = {t: draw(st.lists(st.integers(0, topics[t] - 1), unique=True)) for t in subscribed}
        member: dict[str, Any] = {"id": f"m{i}", "topics": subscribed, "owned": owned}
        member["generation"] = draw(st.integers(0, 1))
        capacity = draw(capacities)
        if capacity is not None and balance == "load":
            member["capacity"] = capacity
        members.append(member)
    problem: dict[str, Any] = {"topics": topics, "members": members}
    if len(names) >= 2 and draw(st.booleans()):
        problem["copartitioned"] = [names[:2]]
    if draw(st.booleans()):
        # KIP-881: replicas on racks a/b, members on a, b or none
        problem["partition_racks"] = {
            t: [draw(st.lists(st.sampled_from(["a", "b"]), max_size=2, unique=True)) for _ in range(n)]
            for t, n in topics.items()
        }
        for member in members:
            rack = draw(st.sampled_from([None, "a", "b"]))
            if rack is not None:
                member["rack"] = rack
    if balance == "load":
        entries = {}
        for t in names:
            kind = draw(st.sampled_from(["none", "one", "list"]))
            if kind == "one":
                entries[t] = draw(weights)
            elif kind == "list":
                entries[t] = [draw(weights) for _ in range(topics[t])]
        if entries:
            problem["partition_weights"] = entries
        problem["options"] = {"balance": "load", "load_tolerance": draw(tolerances), "time_limit_ms": 30_000}
    else:
        problem["options"] = {"balance": "per_topic", "time_limit_ms": 30_000}
    problem["options"]["protocol"] = draw(st.sampled_from(["eager", "cooperative"]))
    return problem


@SETTINGS
@given(groups("load"))
def test_load_levels_equal_the_brute_force_reference(problem: dict[str, Any]) -> None:
    """Level 1 (L*), level 2 (fewest moves within (1 + tolerance) L*) and level 3's bottleneck are
    the reference's, proven, and stats.load says so; where its integers fit, level 3's sum of
    W^2 / c and then the off-rack partitions are the reference's too."""
    want = load_reference(problem)
    solution = solve_consumer(problem)
    assert_valid(problem, solution)
    stats = solution.stats
    assert stats.optimal and not stats.fallback
    assert stats.load is not None
    assert stats.load.lower_bound == float(want["bottleneck"])
    assert stats.moves == want["moves"] == stats.load.moves_lower_bound
    assert stats.load.max == float(want["even_bottleneck"])
    final = solution.target if solution.target is not None else solution.assignment
    if _spread_fits(problem):
        assert _spread(problem, final) == want["spread"]
        if "partition_racks" in problem:
            assert _off_rack(problem, final) == want["racks"]


def _spread_fits(problem: dict[str, Any]) -> bool:
    """Whether the sum of W^2 / c, scaled to integers by lcm(c), surely fits 64 bits (the exact
    model then minimises it; beyond, level 3 stops at the bottleneck)."""
    weights = reference_weights(problem)
    total = sum(sum(w) for w in weights.values())
    capacity = [m.get("capacity", 1) for m in problem["members"]]
    scale = math.lcm(*capacity)
    return sum(scale // c * total * total for c in capacity) < 2**62


def _spread(problem: dict[str, Any], final: dict[str, dict[str, list[int]]]) -> Fraction:
    weights = reference_weights(problem)
    capacity = {m["id"]: m.get("capacity", 1) for m in problem["members"]}
    total = {m: sum(weights[t][p] for t, ps in parts.items() for p in ps) for m, parts in final.items()}
    return sum((Fraction(w * w, capacity[m]) for m, w in total.items()), Fraction(0))


@pytest.mark.parametrize("path", ["as dispatched", "extras", "cp-sat", "flow"])
@SETTINGS
@given(problem=groups("per_topic"))
def test_per_topic_levels_equal_the_brute_force_reference(path: str, problem: dict[str, Any]) -> None:
    """Each topic spread floor/ceil, then the fewest squared totals, then the fewest moves, then
    (racks given) the fewest partitions read off-rack: as dispatched (the extras' flow without
    joins or racks, else the flow, CP-SAT for small groups with mixed unit widths or racks), by
    the extras' flow where it applies, by CP-SAT alone, and by the full flow alone (proven where
    every member's units are of one width; joins' racks left out)."""
    want = per_topic_reference(problem)
    if path == "extras":
        assume("partition_racks" not in problem and "copartitioned" not in problem)
        calls: list[object] = []

        def counted(*args: Any) -> Any:
            calls.append(args)
            return solve_per_topic_extras(*args)

        with patch.object(balanced_solve, "solve_per_topic_extras", counted):
            solution = solve_consumer(problem)
        assert len(calls) == 1
    elif path == "cp-sat":
        with (
            patch.object(balanced_solve, "member_unit_widths", lambda index: ({}, False)),
            patch.object(balanced_solve, "fits_extras", lambda index: False),
        ):
            solution = solve_consumer(problem)
        assert solution.stats.solver == "cp-sat"
    elif path == "flow":
        with (
            patch.object(balanced_solve, "PER_TOPIC_MAX_PAIRS", 0),
            patch.object(balanced_solve, "fits_extras", lambda index: False),
        ):
            solution = solve_consumer(problem)
        assert solution.stats.solver == "min-cost-flow"
        assume(solution.stats.optimal)
    else:
        solution = solve_consumer(problem)
    assert_valid(problem, solution)
    assert solution.stats.optimal
    final = solution.target if solution.target is not None else solution.assignment
    loads = [sum(len(p) for p in parts.values()) for parts in final.values()]
    assert sum(v * v for v in loads) == want["squares"]
    assert solution.stats.moves == want["moves"]
    assert solution.stats.load is None
    if "partition_racks" in problem and not (path == "flow" and "copartitioned" in problem):
        assert _off_rack(problem, final) == want["racks"]


def _off_rack(problem: dict[str, Any], final: dict[str, dict[str, list[int]]]) -> int:
    rack = {m["id"]: m.get("rack") for m in problem["members"]}
    held = problem["partition_racks"]
    return sum(
        1
        for member, parts in final.items()
        for topic, ps in parts.items()
        for p in ps
        if rack[member] is not None and held[topic][p] and rack[member] not in held[topic][p]
    )


@SETTINGS
@given(groups("load"))
def test_load_heuristic_bounds_are_sound(problem: dict[str, Any]) -> None:
    """Without the exact model (as at scale): a valid answer whose lower_bound is at most L*,
    whose moves_lower_bound is at most the level-2 optimum, and optimal only when it is."""
    want = load_reference(problem)
    with patch.object(balanced_solve, "EXACT_MAX_PAIRS", 0):
        solution = solve_consumer(problem)
    assert_valid(problem, solution)
    figures = solution.stats.load
    assert figures is not None and figures.lower_bound is not None and figures.moves_lower_bound is not None
    assert Fraction(figures.lower_bound) <= want["bottleneck"] * (1 + Fraction(1, 10**12))
    assert figures.moves_lower_bound <= want["moves"]
    if solution.stats.optimal:
        assert solution.stats.moves == want["moves"]


@pytest.mark.parametrize(
    "name", ["consumer-load-hot-partition.json", "consumer-load-strict.json", "consumer-per-topic-join.json"]
)
def test_contract_examples_reach_their_figures(name: str) -> None:
    """The hot partition stays put within 5%, moves one partition at tolerance 0, and the
    per-topic join spreads each topic one partition per member."""
    want = expected()[name]
    problem = load_example(name)
    solution = solve_consumer(problem)
    assert_valid(problem, solution)
    assert solution.stats.moves == want["moves"]
    assert solution.stats.owned == want["owned"]
    assert solution.stats.optimal is want["optimal"]
    if "load" in want:
        assert solution.stats.load is not None
        assert solution.stats.load.model_dump() == want["load"]
    if "loads" in want:
        loads = sorted(sum(len(p) for p in parts.values()) for parts in solution.assignment.values())
        assert loads == sorted(want["loads"])


@pytest.mark.parametrize("strategy", ["sticky", "range", "roundrobin"])
def test_baselines_with_load_report_their_loads_and_never_claim_optimality(strategy: str) -> None:
    """Baselines answer as with count; stats.load measures their answer."""
    problem = load_example("consumer-load-hot-partition.json")
    problem["options"] = {"balance": "load", "strategy": strategy}
    solution = solve_consumer(problem)
    assert_valid(problem, solution)
    assert solution.stats.optimal is False and solution.stats.strategy == strategy
    assert solution.stats.load is not None


def test_count_answers_ignore_capacity_and_weights_with_a_warning() -> None:
    """capacity and partition_weights change nothing with balance count, and the answer says so."""
    problem = load_example("consumer-load-hot-partition.json")
    plain = json.loads(json.dumps(problem))
    problem["options"] = {}
    del plain["options"], plain["partition_weights"]
    for member in plain["members"]:
        member.pop("capacity", None)
    with_fields, without = solve_consumer(problem), solve_consumer(plain)
    assert with_fields.assignment == without.assignment
    assert any("capacity is ignored" in w for w in with_fields.stats.warnings)
    assert any("partition_weights is ignored" in w for w in with_fields.stats.warnings)
    assert with_fields.stats.load is None


def test_load_names_topics_without_weights_and_ignores_max_imbalance() -> None:
    """A subscribed topic with no entry weighs the mean of the given weights, named in warnings."""
    problem = load_example("consumer-load-hot-partition.json")
    problem["partition_weights"] = {"orders": [900, 40, 40, 20]}
    problem["options"]["max_imbalance"] = 2
    solution = solve_consumer(problem)
    assert_valid(problem, solution)
    warnings = " | ".join(solution.stats.warnings)
    assert "weigh 250 per partition" in warnings and "clicks" in warnings
    assert "max_imbalance is ignored" in warnings


def test_load_at_scale_answers_in_time_with_sound_bounds() -> None:
    """A group beyond the exact model: the heuristic answers within the time limit, valid, with
    lower_bound <= max and moves_lower_bound <= moves."""
    partitions = 3_000
    problem = {
        "topics": {"hot": partitions},
        "partition_weights": {"hot": [(p * 7919) % 1000 + (50_000 if p % 500 == 0 else 0) for p in range(partitions)]},
        "members": [
            {
                "id": f"c{i}",
                "topics": ["hot"],
                "capacity": 1 + i % 3,
                "generation": 1,
                "owned": {"hot": list(range(i, partitions, 19))} if i < 19 else {},
            }
            for i in range(20)
        ],
        "options": {"balance": "load", "time_limit_ms": 3_000},
    }
    solution = solve_consumer(problem)
    assert_valid(problem, solution)
    figures = solution.stats.load
    assert figures is not None and figures.lower_bound is not None and figures.moves_lower_bound is not None
    assert figures.lower_bound <= figures.max <= 1.05 * figures.lower_bound * 1.5
    assert figures.moves_lower_bound <= solution.stats.moves
    assert solution.stats.time_ms < 3_000


@SETTINGS
@given(groups("load"))
def test_lag_greedy_gives_each_unit_heaviest_first_to_the_least_normalized_load(problem: dict[str, Any]) -> None:
    """The `lag-greedy` baseline, replayed: units by weight, heaviest first, each to an eligible
    member whose W/c was the smallest at its turn; ownership plays no part."""
    problem["options"]["strategy"] = "lag-greedy"
    solution = solve_consumer(problem)
    assert_valid(problem, solution)
    assert solution.stats.strategy == "lag-greedy" and not solution.stats.optimal
    assert solution.stats.load is not None
    _, _, units, _ = candidates(problem)
    weight = reference_weights(problem)
    capacity = {m["id"]: m.get("capacity", 1) for m in problem["members"]}
    final = solution.target if solution.target is not None else solution.assignment
    holder = {(topic, p): member for member, parts in final.items() for topic, ps in parts.items() for p in ps}
    load = dict.fromkeys(capacity, 0)

    def unit_weight(unit: dict[str, Any], member: str) -> int:
        return sum(weight[t][unit["p"]] for t in unit["reads"][member])

    # heaviest first; equal weights by topic group, then partition number
    turns = sorted(units, key=lambda u: (-min(unit_weight(u, m) for m in u["eligible"]), u["shape"], u["p"]))
    for unit in turns:
        member = next(holder[(t, unit["p"])] for t in unit["group"] if (t, unit["p"]) in holder)
        least = min(Fraction(load[m], capacity[m]) for m in unit["eligible"])
        assert Fraction(load[member], capacity[member]) == least
        load[member] += unit_weight(unit, member)


def _spread_per_topic(solution: Any, problem: dict[str, Any]) -> dict[str, list[int]]:
    """topic -> partitions per subscriber."""
    return {
        topic: [len(solution.assignment[m["id"]].get(topic, [])) for m in problem["members"] if topic in m["topics"]]
        for topic in problem["topics"]
    }


def test_per_topic_at_scale_is_a_proven_flow_that_spreads_every_topic() -> None:
    """Beyond CP-SAT's size, the flow proves all levels: every topic floor/ceil over its readers."""
    topics = {f"t{i}": 50 + 7 * i for i in range(40)}
    members = [
        {
            "id": f"c{m}",
            "topics": [t for i, t in enumerate(topics) if (i + m) % 3],
            "generation": 1,
            "owned": {t: list(range(m, n, 11)) for i, (t, n) in enumerate(topics.items()) if (i + m) % 3},
        }
        for m in range(10)
    ]
    problem = {"topics": topics, "members": members, "options": {"balance": "per_topic"}}
    solution = solve_consumer(problem)
    assert_valid(problem, solution)
    assert solution.stats.solver == "min-cost-flow" and solution.stats.optimal
    for counts in _spread_per_topic(solution, problem).values():
        assert max(counts) - min(counts) <= 1


def test_per_topic_with_mixed_unit_widths_beyond_cpsat_still_spreads_every_topic() -> None:
    """A member taking join units (2 partitions) and single partitions, too large for CP-SAT: the
    flow keeps level 1 and says the totals are not proven."""
    topics = {"a": 120, "b": 120, "c": 300}
    members = [{"id": f"c{m}", "topics": ["a", "b", "c"]} for m in range(30)]
    problem = {"topics": topics, "members": members, "copartitioned": [["a", "b"]], "options": {"balance": "per_topic"}}
    solution = solve_consumer(problem)
    assert_valid(problem, solution)
    assert not solution.stats.optimal and solution.stats.fallback
    for counts in _spread_per_topic(solution, problem).values():
        assert max(counts) - min(counts) <= 1


def test_a_load_fallback_is_valid_and_reports_how_far_it_may_be() -> None:
    """When the caller's deadline has passed, the KIP-54 fallback answers; stats.load still gives
    its loads and proven bounds, and it never claims optimality."""
    problem = load_example("consumer-load-strict.json")
    solution = solve_consumer(problem, fallback_reason="the service's deadline passed")
    assert_valid(problem, solution)
    assert solution.stats.fallback and not solution.stats.optimal
    figures = solution.stats.load
    assert figures is not None and figures.lower_bound is not None and figures.lower_bound <= figures.max


@pytest.mark.parametrize("balance", ["load", "per_topic"])
def test_balanced_modes_keep_a_short_time_limit(balance: str) -> None:
    """A 300-partition group with 50 ms: a valid answer within the limit (plus room for a shared
    machine's stalls; the load model left to run takes about 5 s here), whatever the solver managed."""
    problem = {
        "topics": {"t": 300, "u": 7},
        "partition_weights": {"t": [(p * 7919) % 10**9 for p in range(300)]},
        "copartitioned": [["t", "u"]] if balance == "per_topic" else [],
        "members": [
            {
                "id": f"c{i}",
                "topics": ["t", "u"] if i % 2 else ["t"],
                "capacity": 1 + i % 3,
                "generation": 1,
                "owned": {"t": list(range(i, 300, 10))},
            }
            for i in range(10)
        ],
        "options": {"balance": balance, "time_limit_ms": 50},
    }
    if balance == "per_topic":
        del problem["partition_weights"]
        for member in problem["members"]:
            del member["capacity"]
    solution = solve_consumer(problem)
    assert_valid(problem, solution)
    assert solution.stats.time_ms < 50 + 450


@SETTINGS
@given(st.data())
def test_per_topic_dealing_keeps_each_claimants_lowest_units(data: st.DataObject) -> None:
    """The flow's kept counts become units: per (claimant, rack signature), its lowest-numbered
    units, as a plain loop over the keep arcs deals them."""
    n, members, signatures = data.draw(st.integers(0, 40)), data.draw(st.integers(1, 5)), data.draw(st.integers(1, 3))
    claimant = np.array(data.draw(st.lists(st.integers(-1, members - 1), min_size=n, max_size=n)), dtype=np.int64)
    sig = np.array(data.draw(st.lists(st.integers(0, signatures - 1), min_size=n, max_size=n)), dtype=np.int64)
    eligible = np.arange(members, dtype=np.int64) * 7 + 3
    claimed = claimant >= 0
    pairs, counts = np.unique(np.stack([claimant[claimed], sig[claimed]]), axis=1, return_counts=True)
    kept = np.array([data.draw(st.integers(0, c)) for c in counts.tolist()], dtype=np.int64)
    want = np.full(n, -1, dtype=np.int64)
    for row, pool, count in zip(pairs[0].tolist(), pairs[1].tolist(), kept.tolist(), strict=True):
        want[np.flatnonzero((claimant == row) & (sig == pool))[:count]] = eligible[row]
    got = np.full(n, -1, dtype=np.int64)
    _keep_lowest(got, claimant, sig, kept, eligible)
    assert got.tolist() == want.tolist()
