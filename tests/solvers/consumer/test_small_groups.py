"""The tiny-group path (solvers/consumer/small/solve.py) answers exactly what the general path answers:
the same JSON bytes (stats.time_ms aside) and the same maps, on random small groups with unequal
and equal subscriptions, claims of every kind (stale, tied, out of range, unknown topic, not
subscribed), empty topics, topics nobody has, odd member ids and both protocols."""

from __future__ import annotations

import json
import random
import re
import string
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import stickyd.solvers.consumer.dispatch as dispatch
from stickyd.models import ConsumerProblem, parse
from stickyd.service.processes.solve_job import Limits, run_job
from stickyd.solvers import solve_consumer
from stickyd.solvers.consumer.lazy_solution import LazyConsumerSolution
from stickyd.solvers.consumer.small.solve import TINY_MEMBERS, TINY_PARTITIONS, fits, solve_tiny
from tests.conftest import assert_valid
from tests.solvers.consumer.reference import reference_objective

TIME_MS = re.compile(rb'"time_ms":[0-9.eE+-]+')
NAMES = st.text(alphabet=string.ascii_letters + string.digits + '-_."\\é', min_size=1, max_size=6)


@st.composite
def small_groups(draw: st.DrawFn) -> dict[str, Any]:
    topics = draw(st.dictionaries(NAMES, st.integers(0, 30), min_size=1, max_size=7))
    known = sorted(topics)
    equal = draw(st.booleans())
    shared = draw(st.lists(st.sampled_from(known), max_size=len(known), unique=True))
    ids = draw(st.lists(NAMES, min_size=1, max_size=12, unique=True))
    members = []
    for member_id in ids:
        reads = shared if equal else draw(st.lists(st.sampled_from([*known, "no-such-topic"]), max_size=5, unique=True))
        member: dict[str, Any] = {"id": member_id, "topics": list(reads)}
        if draw(st.integers(0, 2)) == 0:
            owned_topics = draw(st.lists(st.sampled_from([*known, "gone"]), max_size=3, unique=True))
            member["owned"] = {t: sorted(draw(st.sets(st.integers(0, 35), max_size=8))) for t in owned_topics}
            member["generation"] = draw(st.integers(-1, 3))
        members.append(member)
    protocol = draw(st.sampled_from(["eager", "cooperative"]))
    return {"topics": topics, "members": members, "options": {"protocol": protocol, "time_limit_ms": 60_000}}


def general_answer(problem: ConsumerProblem, monkeypatch: pytest.MonkeyPatch) -> LazyConsumerSolution:
    with monkeypatch.context() as patched:
        patched.setattr(dispatch, "fits", lambda _problem: False)
        solution = solve_consumer(problem)
    assert isinstance(solution, LazyConsumerSolution)
    return solution


def assert_same_answer(data: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> bool:
    """The answer with the tiny path allowed equals the general path's; whether the tiny path
    answered it (rather than handing it back)."""
    problem = parse(ConsumerProblem, data)
    answered: list[bool] = []

    def counted(*args: Any) -> LazyConsumerSolution | None:
        solution = solve_tiny(*args)
        answered.append(solution is not None)
        return solution

    with monkeypatch.context() as patched:
        patched.setattr(dispatch, "solve_tiny", counted)
        tiny = solve_consumer(problem)
    general = general_answer(problem, monkeypatch)
    assert isinstance(tiny, LazyConsumerSolution)
    assert TIME_MS.sub(b"", tiny.answer_json()) == TIME_MS.sub(b"", general.answer_json())
    strip = {"stats": {"time_ms"}}
    assert tiny.model_dump(exclude=strip) == general.model_dump(exclude=strip)
    assert_valid(data, tiny)
    return answered == [True]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=small_groups())
def test_the_tiny_path_answers_the_general_paths_bytes_on_random_small_groups(
    data: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    assert_same_answer(data, monkeypatch)


def kafka_like_group(rng: random.Random) -> dict[str, Any]:
    """Members reading 1 to all of up to 12 topics, most owning what a round robin over present
    and departed members gave them, some at a newer generation."""
    topics = {f"topic-{i}": rng.randint(1, 40) for i in range(rng.randint(1, 12))}
    names = sorted(topics)
    members: list[dict[str, Any]] = [
        {"id": f"consumer-{j}", "topics": rng.sample(names, rng.randint(1, len(names)))}
        for j in range(rng.randint(1, 30))
    ]
    before = [m["id"] for m in members if rng.random() < 0.8] + ["departed-1", "departed-2"]
    owned: dict[str, dict[str, list[int]]] = {}
    turn = 0
    for t in names:
        for p in range(topics[t]):
            owned.setdefault(before[turn % len(before)], {}).setdefault(t, []).append(p)
            turn += 1
    for m in members:
        if m["id"] in owned:
            m["owned"] = owned[m["id"]]
            m["generation"] = rng.choice((4, 4, 4, 5))
    return {"topics": topics, "members": members}


def test_the_tiny_path_answers_the_general_paths_bytes_on_kafka_like_groups(monkeypatch: pytest.MonkeyPatch) -> None:
    """300 seeded groups as Kafka leaves them: all answered as the general path does, and all of
    them by the tiny path (the comparison is not vacuous)."""
    rng = random.Random(14)
    tiny = sum(assert_same_answer(kafka_like_group(rng), monkeypatch) for _ in range(300))
    assert tiny == 300, f"only {tiny} of 300 answered by the tiny path"


def test_a_solver_process_job_answers_the_same_bytes_with_the_tiny_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """What a solver process runs (stickyd.service.processes.solve_job.run_job on the body's bytes: the msgspec decode
    with claims read from their bytes) answers the same bytes with and without the tiny path."""
    rng = random.Random(15)
    limits = Limits(max_partitions=10**6, max_members=10**5, default_time_limit_ms=10_000, max_time_limit_ms=60_000)
    for _ in range(60):
        group = kafka_like_group(rng)
        group["options"] = {"protocol": rng.choice(("eager", "cooperative"))}
        body = json.dumps(group).encode()
        with_tiny = run_job("consumer", body, limits)
        with monkeypatch.context() as patched:
            patched.setattr(dispatch, "fits", lambda _problem: False)
            general = run_job("consumer", body, limits)
        assert with_tiny.status == general.status == 200
        assert TIME_MS.sub(b"", with_tiny.body) == TIME_MS.sub(b"", general.body)


def test_a_group_with_claims_and_unequal_reads_is_solved_by_the_tiny_flow_to_the_references_optimum() -> None:
    """100 partitions over 10 topics, members reading 5 to 10 of them, half of them owning part
    of a topic: the tiny min-cost flow answers, proven, with the exact reference's squared loads
    and moves."""
    topics = {f"t{i}": 10 for i in range(10)}
    names = sorted(topics)
    members: list[dict[str, Any]] = [{"id": f"m{i:02d}", "topics": names[: 5 + i % 6]} for i in range(10)]
    for i, member in enumerate(members[:5]):
        member["owned"] = {names[i]: list(range(0, 10, 2))}
    data = {"topics": topics, "members": members}
    problem = parse(ConsumerProblem, data)
    assert fits(problem)
    solution = solve_consumer(problem)
    assert solution.stats.solver == "min-cost-flow" and solution.stats.optimal
    assert_valid(data, solution)
    want = reference_objective(data)
    loads = [sum(len(parts) for parts in owned.values()) for owned in solution.assignment.values()]
    assert sum(x * x for x in loads) == want["squares"]
    assert solution.stats.moves == want["moves"]


def test_groups_outside_the_scope_go_the_general_way() -> None:
    """Joins, racks, another strategy, max_imbalance, cooperative claims and sizes past the
    bounds are not tiny."""
    base: dict[str, Any] = {"topics": {"a": 4, "b": 4}, "members": [{"id": "x", "topics": ["a", "b"]}]}
    assert fits(parse(ConsumerProblem, base))
    outside = [
        {**base, "copartitioned": [["a", "b"]]},
        {**base, "partition_racks": {"a": [["r1"]] * 4}},
        {**base, "options": {"strategy": "sticky"}},
        {**base, "options": {"max_imbalance": 1}},
        {
            **base,
            "options": {"protocol": "cooperative"},
            "members": [{"id": "x", "topics": ["a"], "owned": {"a": [0]}}],
        },
        {**base, "topics": {"a": TINY_PARTITIONS + 1}},
        {**base, "members": [{"id": f"m{i}", "topics": ["a"]} for i in range(TINY_MEMBERS + 1)]},
    ]
    for data in outside:
        assert not fits(parse(ConsumerProblem, data)), data
