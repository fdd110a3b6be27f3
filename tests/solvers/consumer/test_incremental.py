"""The incremental path (solvers/consumer/incremental.py): from a previous assignment that was
stickyd's own optimum, one member leaves, one joins or partitions are added; when the path answers,
its answer is valid and as good as the full min-cost flow's and the exact reference's (balance,
then moves), and its proof (incremental_proof.py) rejects answers that are not optimal."""

from __future__ import annotations

import random
import time
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import stickyd.solvers.consumer.dispatch
import stickyd.solvers.consumer.incremental
from stickyd.models import ConsumerProblem, index_consumer_problem
from stickyd.solvers import solve_consumer
from stickyd.solvers.consumer.classes import build_classes
from stickyd.solvers.consumer.dispatch import _uniform_unit_weights
from stickyd.solvers.consumer.flow import solve_min_cost_flow
from stickyd.solvers.consumer.incremental import Layout, _dealt_again, _repair, solve_incremental, water_fill
from stickyd.solvers.consumer.incremental_moves import _cost, aggregate, realize, settle
from stickyd.solvers.consumer.incremental_proof import FAR, least_reachable, negative_cycle, residual_costs
from stickyd.solvers.consumer.result import build_solution
from stickyd.solvers.outcome import Outcome
from tests.conftest import assert_valid
from tests.solvers.consumer.reference import reference_objective
from tests.solvers.consumer.test_properties import _squares

EVENTS = ("leave", "join", "partitions-added", "partitions-grown")
INCREMENTAL = Outcome(strategy="optimal", solver="incremental", optimal=True)
FLOW = Outcome(strategy="optimal", solver="min-cost-flow", optimal=True)


def group_before(rng: random.Random, topics: int, members: int, partitions: int) -> dict[str, Any]:
    """Unequal subscriptions, nobody owning anything yet."""
    counts = {f"t{i}": rng.randint(1, partitions) for i in range(topics)}
    names = list(counts)
    people = [{"id": f"m{i:03d}", "topics": rng.sample(names, rng.randint(1, len(names)))} for i in range(members)]
    return {"topics": counts, "members": people}


def after_event(rng: random.Random, before: dict[str, Any], event: str) -> dict[str, Any]:
    """`before` solved to stickyd's optimum, its answer as the claims, then `event`."""
    answer = solve_consumer(before).assignment
    members = [{**m, "owned": answer.get(m["id"], {}), "generation": 1} for m in before["members"]]
    topics = dict(before["topics"])
    names = list(topics)
    if event == "leave":
        members.pop(rng.randrange(len(members)))
    elif event == "join":
        members.append({"id": "m-new", "topics": rng.sample(names, rng.randint(1, len(names)))})
    elif event == "partitions-added":
        for t in rng.sample(names, rng.randint(1, len(names))):
            topics[t] += rng.randint(1, 4)
    else:  # a few topics grow by up to a half: their readers pass units down chains to the others
        for t in rng.sample(names, max(1, len(names) // 3)):
            topics[t] += rng.randint(1, max(1, topics[t] // 2))
    return {"topics": topics, "members": members}


def figures(problem: dict[str, Any], owners: list[np.ndarray], outcome: Outcome) -> tuple[int, int]:
    """(sum of squared loads, moves) of a valid answer."""
    model = ConsumerProblem.model_validate(problem)
    solution = build_solution(model, index_consumer_problem(model), owners, outcome, 0.0)
    assert_valid(model, solution)
    return _squares(solution), solution.stats.moves


def full_flow(problem: dict[str, Any]) -> list[np.ndarray]:
    index = index_consumer_problem(ConsumerProblem.model_validate(problem))
    weights = _uniform_unit_weights(index)
    assert weights is not None
    deadline = time.monotonic() + 60
    return solve_min_cost_flow(index, build_classes(index), weights, max_imbalance=0, deadline=deadline).owners


def incremental(problem: dict[str, Any]) -> list[np.ndarray] | None:
    return solve_incremental(index_consumer_problem(ConsumerProblem.model_validate(problem)))


SMALL = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SMALL
@given(st.integers(0, 2**32), st.sampled_from(EVENTS))
def test_an_incremental_answer_is_as_good_as_the_full_flows(seed: int, event: str) -> None:
    rng = random.Random(seed)
    problem = after_event(rng, group_before(rng, rng.randint(1, 5), rng.randint(2, 8), 12), event)
    owners = incremental(problem)
    if owners is None:
        return  # outside what the proof covers: the full flow answers (pinned below)
    assert figures(problem, owners, INCREMENTAL) == figures(problem, full_flow(problem), FLOW)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 2**32), st.sampled_from(EVENTS))
def test_an_incremental_answer_meets_the_exact_reference(seed: int, event: str) -> None:
    rng = random.Random(seed)
    problem = after_event(rng, group_before(rng, rng.randint(1, 3), rng.randint(2, 4), 5), event)
    owners = incremental(problem)
    if owners is None:
        return
    reference = reference_objective(problem)
    assert figures(problem, owners, INCREMENTAL) == (reference["squares"], reference["moves"])


@pytest.mark.parametrize("event", ["leave", "join"])
def test_a_leave_or_a_join_after_the_optimum_is_answered_incrementally(event: str) -> None:
    """Most leaves and joins of mid-sized groups are proven by the incremental path alone."""
    answered = 0
    for seed in range(20):
        rng = random.Random(seed)
        problem = after_event(rng, group_before(rng, 6, 12, 30), event)
        owners = incremental(problem)
        if owners is not None:
            answered += 1
            assert figures(problem, owners, INCREMENTAL) == figures(problem, full_flow(problem), FLOW)
    assert answered >= 15, answered


def test_the_dispatcher_answers_a_large_leave_incrementally_and_as_the_flow_does(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """(Its share of the flow's estimate widened: a loaded test machine must not decide.)"""
    monkeypatch.setattr(stickyd.solvers.consumer.dispatch, "INCREMENTAL_SHARE_OF_FLOW", 100.0)
    rng = random.Random(3)
    problem = after_event(rng, group_before(rng, 40, 60, 500), "leave")
    assert sum(problem["topics"].values()) >= stickyd.solvers.consumer.incremental.MIN_UNITS
    fast = solve_consumer(problem)
    assert fast.stats.solver == "incremental" and fast.stats.optimal, fast.stats
    assert_valid(problem, fast)
    monkeypatch.setattr(stickyd.solvers.consumer.dispatch, "solve_incremental", lambda *_args: None)
    full = solve_consumer(problem)
    assert full.stats.solver == "min-cost-flow"
    assert_valid(problem, full)
    assert (_squares(fast), fast.stats.moves) == (_squares(full), full.stats.moves)


def grown_by_a_tenth(rng: random.Random, topics: int, members: int, partitions: int) -> dict[str, Any]:
    """Members reading about a quarter of the topics, solved to stickyd's optimum, then a tenth of
    the topics grow by a tenth (the bench's partitions-added event)."""
    before = group_before(rng, topics, members, partitions)
    names = list(before["topics"])
    for member in before["members"]:
        member["topics"] = [t for t in names if rng.random() < 0.25] or [names[0]]
    answer = solve_consumer(before).assignment
    people = [{**m, "owned": answer.get(m["id"], {}), "generation": 1} for m in before["members"]]
    grown = dict(before["topics"])
    for t in rng.sample(names, topics // 10):
        grown[t] += max(1, grown[t] // 10)
    return {"topics": grown, "members": people}


@pytest.mark.parametrize("seed", [0, 2])
def test_partitions_added_that_need_hundreds_of_chains_are_answered_incrementally(seed: int) -> None:
    """100 topics, 300 members, 110k partitions: the readers of the grown topics pass units down
    chains to hundreds of members, in a few rounds of one search each; as good as the full flow."""
    problem = grown_by_a_tenth(random.Random(seed), 100, 300, 2_000)
    owners = incremental(problem)
    assert owners is not None
    assert figures(problem, owners, INCREMENTAL) == figures(problem, full_flow(problem), FLOW)


def test_the_proof_starts_from_the_tables_the_repair_kept_up_to_date(monkeypatch: pytest.MonkeyPatch) -> None:
    """After hundreds of chains, the counts and residual tables the repair hands the proof (with its
    last search's labels to start from) are the ones made afresh from where the units are: nothing
    is built twice, nothing stale."""
    handed: list[bool] = []

    def checked(counts: np.ndarray, claimed: np.ndarray, eligible: np.ndarray, *args: Any, **kw: Any) -> bool:
        tables = kw["tables"]
        fresh = residual_costs(counts, claimed, eligible)
        handed.append(all((a == b).all() for a, b in zip(tables, fresh, strict=True)) and kw["potentials"] is not None)
        return settle(counts, claimed, eligible, *args, **kw)

    monkeypatch.setattr(stickyd.solvers.consumer.incremental, "settle", checked)
    problem = grown_by_a_tenth(random.Random(7), 100, 300, 2_000)
    index = index_consumer_problem(ConsumerProblem.model_validate(problem))
    owners = solve_incremental(index)
    assert owners is not None and handed == [True]
    assert figures(problem, owners, INCREMENTAL) == figures(problem, full_flow(problem), FLOW)


def test_a_round_hands_units_down_a_chain_to_the_lightest_member() -> None:
    """Member 0 (3 units of topic 0) reaches member 2 (none) only through member 1 (topic 1): one
    round hands a unit of topic 0 to member 1 and one of topic 1 to member 2, and no chain is left."""
    eligible = [[True, True, False], [False, True, True]]
    layout = _layout([0, 0, 0, 1, 1], [0, 0, 0, 1, 1], [0, 0, 0, 1, 1], eligible)
    loads = layout.loads()
    repaired = _repair(layout, loads, float("inf"))
    assert repaired is not None
    assert loads.tolist() == [2, 2, 1] == layout.loads().tolist()
    assert repaired[0].tolist() == layout.counts().tolist() == [[2, 0], [1, 1], [0, 1]]
    reach = least_reachable(layout.eligible, layout.held(), loads)
    assert reach is not None and (reach >= loads - 1).all()


FAR_FROM_BALANCE: dict[str, Any] = {
    "topics": {"a": 6, "b": 2},
    "members": [
        {"id": "x", "topics": ["a", "b"], "owned": {"a": [0, 1, 2, 3, 4, 5]}, "generation": 1},
        {"id": "y", "topics": ["a"], "owned": {}, "generation": 1},
        {"id": "z", "topics": ["b"], "owned": {"b": [0, 1]}, "generation": 1},
    ],
}


def test_claims_far_from_balance_are_evened_by_chains_as_the_reference_does() -> None:
    owners = incremental(FAR_FROM_BALANCE)
    assert owners is not None
    reference = reference_objective(FAR_FROM_BALANCE)
    assert figures(FAR_FROM_BALANCE, owners, INCREMENTAL) == (reference["squares"], reference["moves"])


def test_claims_far_from_balance_before_the_event_are_left_to_the_full_flow() -> None:
    """x owns all of topic a, which y (owning one partition of b) reads too: the previous
    assignment was no optimum, so there is no increment to start from."""
    problem = {
        "topics": {"a": 6, "b": 2},
        "members": [
            {"id": "x", "topics": ["a"], "owned": {"a": [0, 1, 2, 3, 4, 5]}, "generation": 1},
            {"id": "y", "topics": ["a", "b"], "owned": {"b": [0]}, "generation": 1},
        ],
    }
    assert incremental(problem) is None


@pytest.mark.parametrize(
    "extra",
    [{"copartitioned": [["a", "b"]]}, {"partition_racks": {"b": [["r1"], ["r2"]]}}],
    ids=["co-partitioned", "racks"],
)
def test_groups_outside_the_scope_are_left_to_the_full_flow(extra: dict[str, Any]) -> None:
    assert incremental({**FAR_FROM_BALANCE, **extra}) is None


def test_water_fill_raises_the_lowest_loads_first() -> None:
    assert water_fill(np.array([5, 1, 3, 1]), 5).tolist() == [0, 3, 0, 2]  # loads 5, 4, 3, 3
    assert water_fill(np.array([2, 2]), 3).tolist() == [2, 1]
    assert water_fill(np.array([0]), 4).tolist() == [4]


def _layout(owner: list[int], claimant: list[int], pool: list[int], eligible: list[list[bool]]) -> Layout:
    sizes = np.bincount(pool, minlength=len(eligible))
    members = len(eligible[0])
    return Layout(
        member_count=members,
        owner=np.array(owner),
        claimant=np.array(claimant),
        pool=np.array(pool),
        offsets=np.concatenate([[0], np.cumsum(sizes)]),
        eligible=np.array(eligible),
        claimed=aggregate(np.array(claimant), np.array(pool), members, len(eligible)),
    )


def _verdict(layout: Layout) -> list[list[int]] | bool:
    """True: proven optimal; a list: negative cycles (members, then topics, then the sink)."""
    n, pools = layout.member_count, len(layout.offsets) - 1
    counts = aggregate(layout.owner, layout.pool, n, pools)
    claimed = aggregate(layout.claimant, layout.pool, n, pools)
    # hand_over (topics, members), take (members, topics), as residual_costs lays them out
    hand_over = np.where(counts > claimed, 0, np.where(counts > 0, 1, FAR)).T
    take = np.where(counts < claimed, -1, np.where(layout.eligible.T, 0, FAR))
    return negative_cycle(hand_over, take, counts.sum(axis=1), n + pools + 2)


def _settled(layout: Layout) -> list[int]:
    """The owners once the negative cycles are cancelled and the counts dealt again."""
    counts = layout.counts()
    assert settle(counts, layout.claimed, layout.eligible)
    realize(layout.owner, layout.claimant, layout.offsets, counts, np.arange(len(layout.offsets) - 1))
    return [int(x) for x in layout.owner]


def test_the_proof_rejects_a_member_two_above_a_reader_of_its_topic() -> None:
    # topic 0 (3 units) all on member 0; member 1 reads it and holds nothing
    layout = _layout([0, 0, 0], [0, 0, 0], [0, 0, 0], [[True, True]])
    assert isinstance(_verdict(layout), list)
    assert _settled(layout) == [0, 0, 1]
    assert _verdict(layout) is True


def test_the_proof_follows_chains_of_hand_overs() -> None:
    """Member 0 (3 units of topic 0) cannot give to member 2 directly, but member 1 reads topic 0
    and holds topic 1, which member 2 reads: 0 -> 1 -> 2 lowers the squares."""
    eligible = [[True, True, False], [False, True, True]]
    layout = _layout([0, 0, 0, 1, 1], [0, 0, 0, 1, 1], [0, 0, 0, 1, 1], eligible)
    assert layout.loads().tolist() == [3, 2, 0]
    reach = least_reachable(layout.eligible, layout.held(), layout.loads())
    assert reach is not None and reach.tolist() == [0, 0, 0]
    assert isinstance(_verdict(layout), list)
    # the chain done: member 0 gives a unit of topic 0 to member 1, which gives one of topic 1 to 2
    assert _settled(layout) == [0, 0, 1, 1, 2]
    assert _verdict(layout) is True


def test_the_proof_rejects_a_move_that_balance_does_not_need() -> None:
    """Member 2 (the joiner) took unit 0 from member 0, which now has fewer than the joiner: giving
    it back keeps the balance and saves a move."""
    layout = _layout([2, 2, 1, 1], [0, 1, 1, 1], [0, 0, 0, 0], [[True, True, True]])
    assert layout.loads().tolist() == [0, 2, 2]
    assert isinstance(_verdict(layout), list)
    # cancelled: member 0 has its partition back, the joiner takes one of member 1's three
    assert _settled(layout) == [0, 1, 1, 2]
    assert _verdict(layout) is True


def test_the_proof_rejects_a_member_holding_anothers_unit_while_its_own_is_elsewhere() -> None:
    """Members 0 and 1 swapped their partitions of one topic: same loads, two needless moves,
    which dealing the counts again undoes."""
    layout = _layout([1, 0], [0, 1], [0, 0], [[True, True]])
    assert _verdict(layout) is True  # as counts, nothing is wrong
    assert _settled(layout) == [0, 1]


def test_a_cycle_among_the_predecessors_is_negative() -> None:
    layout = _layout([0, 0, 0, 0], [0, 0, 0, 0], [0, 0, 0, 0], [[True, True, True]])
    cycles = _verdict(layout)
    assert isinstance(cycles, list) and cycles
    n, pools = layout.member_count, 1
    counts = aggregate(layout.owner, layout.pool, n, pools)
    claimed = aggregate(layout.claimant, layout.pool, n, pools)
    hand_over, take = residual_costs(counts, claimed, layout.eligible)
    for cycle in cycles:
        assert _cost(cycle, hand_over, take, counts.sum(axis=1), n + pools + 2) < 0


@settings(max_examples=100, deadline=None)
@given(st.integers(1, 6), st.integers(1, 5), st.data())
def test_the_residual_costs_are_the_arcs_the_proof_describes(n: int, pools: int, data: st.DataObject) -> None:
    """Hand a unit over: free when the member holds one it did not own, a move when only its own,
    no arc when it holds none; take one: one back when its own are elsewhere, else free for a
    reader, no arc for a member that does not read the topic."""
    cells = st.lists(st.integers(0, 3), min_size=n * pools, max_size=n * pools)
    counts = np.array(data.draw(cells), dtype=np.int64).reshape(n, pools)
    claimed = np.array(data.draw(cells), dtype=np.int64).reshape(n, pools)
    eligible = np.array(data.draw(st.lists(st.booleans(), min_size=n * pools, max_size=n * pools))).reshape(pools, n)
    hand_over, take = residual_costs(counts, claimed, eligible)
    for m in range(n):
        for p in range(pools):
            held, owned = int(counts[m, p]), int(claimed[m, p])
            assert hand_over[p, m] == (0 if held > owned else 1 if held > 0 else FAR)
            assert take[m, p] == (-1 if held < owned else 0 if eligible[p, m] else FAR)


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 6), st.integers(1, 5), st.data())
def test_the_proof_is_the_same_whatever_distances_it_starts_from(n: int, pools: int, data: st.DataObject) -> None:
    """Started from any members' and topics' distances (the repair hands it its last search's), the
    proof proves exactly what it proves from the virtual root, and any cycle it shows is negative."""
    cells = st.lists(st.integers(0, 3), min_size=n * pools, max_size=n * pools)
    counts = np.array(data.draw(cells), dtype=np.int64).reshape(n, pools)
    claimed = np.array(data.draw(cells), dtype=np.int64).reshape(n, pools)
    eligible = np.array(data.draw(st.lists(st.booleans(), min_size=n * pools, max_size=n * pools))).reshape(pools, n)
    hand_over, take = residual_costs(counts, claimed, eligible)
    loads, balance = counts.sum(axis=1), n + pools + 2
    distances = st.lists(st.integers(-(10**6), 10**6), min_size=n + pools, max_size=n + pools)
    start = np.array(data.draw(distances), dtype=np.int64)
    from_root = negative_cycle(hand_over, take, loads, balance)
    started = negative_cycle(hand_over, take, loads, balance, start=(start[:n], start[n:]))
    assert (started is True) == (from_root is True)
    for found in (from_root, started):
        for cycle in found if isinstance(found, list) else []:
            assert _cost(cycle, hand_over, take, loads, balance) < 0


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 5), st.integers(1, 4), st.data())
def test_the_topics_dealt_again_are_those_the_whole_tables_name(n: int, pools: int, data: st.DataObject) -> None:
    """Only topics where an owned unit changed owner are looked at (besides those whose counts the
    proof changed), yet the topics dealt again are exactly those the whole tables name: counts
    changed, or a member holding others' units while its own are elsewhere."""
    sizes = data.draw(st.lists(st.integers(0, 4), min_size=pools, max_size=pools))
    pool = np.repeat(np.arange(pools), sizes)
    units = len(pool)
    members = st.integers(-1, n - 1)
    claimant = np.array(data.draw(st.lists(members, min_size=units, max_size=units)), dtype=np.int64)
    owner = np.array(data.draw(st.lists(st.integers(0, n - 1), min_size=units, max_size=units)), dtype=np.int64)
    layout = Layout(
        member_count=n,
        owner=owner,
        claimant=claimant,
        pool=pool,
        offsets=np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64),
        eligible=np.ones((pools, n), dtype=bool),
        claimed=aggregate(claimant, pool, n, pools),
    )
    before = layout.counts()
    assert (before == aggregate(owner, pool, n, pools)).all()
    # what cancelling cycles may leave: some counts one up or down
    change = data.draw(st.lists(st.integers(-1, 1), min_size=n * pools, max_size=n * pools))
    counts = np.maximum(before + np.array(change, dtype=np.int64).reshape(n, pools), 0)
    whole = ((before != counts) | (layout.kept() != np.minimum(counts, layout.claimed))).any(axis=0)
    assert _dealt_again(layout, before, counts).tolist() == np.flatnonzero(whole).tolist()
