"""The Streams index reads claims in columns (models/streams/index.py): its previous owners,
previous standby clients and caught-up clients are those a plain reading of the contract gives,
claim by claim (the reference below); and the model's one-expression check of task names accepts
exactly the names `parse_task` accepts."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from stickyd.models.streams.index import index_streams_problem
from stickyd.models.streams.problem import StreamsClient, StreamsProblem, parse_task


def reference_claims(problem: StreamsProblem) -> tuple[list[int], list[frozenset[int]], list[frozenset[int]]]:
    """Per task (by subtopology, then partition): previous active (-1: nobody, or claimed by two
    clients), previous standby clients (not the previous active), clients within
    acceptable_recovery_lag (the previous active counts as lag 0 unless it reports its lag)."""
    index = index_streams_problem(problem)
    task = {index.task_name(t): t for t in range(index.task_count)}
    clients = sorted(problem.clients, key=lambda c: c.id)
    claimants: dict[int, set[int]] = {}
    standbys: dict[int, set[int]] = {}
    lags: dict[int, dict[int, int]] = {}
    for j, client in enumerate(clients):
        for name in client.active:
            if name in task:
                claimants.setdefault(task[name], set()).add(j)
        for name in client.standby:
            if name in task:
                standbys.setdefault(task[name], set()).add(j)
        for name, lag in client.lags.items():
            if name in task:
                lags.setdefault(task[name], {})[j] = lag
    owners = [next(iter(claimants[t])) if len(claimants.get(t, ())) == 1 else -1 for t in range(index.task_count)]
    held = [frozenset(standbys.get(t, set()) - {owners[t]}) for t in range(index.task_count)]
    caught = []
    for t in range(index.task_count):
        reported = {owners[t]: 0} if owners[t] >= 0 else {}
        reported.update(lags.get(t, {}))
        caught.append(frozenset(j for j, lag in reported.items() if lag <= problem.config.acceptable_recovery_lag))
    return owners, held, caught


@st.composite
def claims(draw: st.DrawFn) -> dict[str, Any]:
    sizes = [draw(st.integers(0, 6)) for _ in range(draw(st.integers(1, 3)))]
    subs = [{"id": str(s), "partitions": size} for s, size in enumerate(sizes)]
    names = [f"{s}_{p}" for s, size in enumerate(sizes) for p in range(size)] + ["7_0", "gone_3"]
    some = st.lists(st.sampled_from(names), max_size=5)
    clients = [
        {
            "id": f"c{j}",
            "active": draw(some),
            "standby": draw(some),
            "lags": draw(st.dictionaries(st.sampled_from(names), st.sampled_from([0, 9, 10, 11, 10**6]), max_size=4)),
        }
        for j in range(draw(st.integers(1, 5)))
    ]
    return {"subtopologies": subs, "clients": clients, "config": {"acceptable_recovery_lag": 10}}


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(claims())
def test_the_columnar_index_reads_claims_as_the_contract_says(problem: dict[str, Any]) -> None:
    parsed = StreamsProblem.model_validate(problem)
    index = index_streams_problem(parsed)
    owners, held, caught = reference_claims(parsed)
    assert index.prev_active.tolist() == owners
    assert list(index.prev_standby) == held
    assert list(index.caught_up) == caught
    tasks = [t for t in range(index.task_count) for _ in range(index.client_count)]
    clients = [j for _ in range(index.task_count) for j in range(index.client_count)]
    mask = index.is_caught_up(np.array(tasks, dtype=np.int64), np.array(clients, dtype=np.int64))
    assert mask.tolist() == [j in caught[t] for t, j in zip(tasks, clients, strict=True)]
    assert index.caught_up_clients(np.arange(index.task_count)) == [sorted(c) for c in caught]


NAME_PARTS = st.sampled_from(["a", "_", "0", "1", "9", "05", "\n", "é", "٣", " ", "2147483647", "2147483648"])


@settings(max_examples=500, deadline=None)
@given(st.lists(st.lists(NAME_PARTS, max_size=5).map("".join), max_size=4))
def test_task_names_are_accepted_exactly_when_each_parses(names: list[str]) -> None:
    ok = all(parse_task(name) is not None for name in names)
    for field in ("active", "standby", "lags"):
        value: Any = dict.fromkeys(names, 0) if field == "lags" else names
        if ok:
            StreamsClient.model_validate({"id": "c", field: value})
        else:
            with pytest.raises(ValidationError, match="is not <subtopology>_<partition>"):
                StreamsClient.model_validate({"id": "c", field: value})
