"""bench/incremental/events.py: the previous assignment it builds is stickyd's own optimum, and its
rows put the incremental path beside the full flow with the same moves (the program refuses rows
where they differ)."""

from __future__ import annotations

import pytest

import stickyd.solvers.consumer.dispatch
from bench.incremental.events import after_optimum, rows
from stickyd.solvers import solve_consumer


def test_the_previous_assignment_is_stickyds_optimum_every_partition_owned_once() -> None:
    problem = after_optimum(2_000, 20, "unequal", "join")
    owned = [(t, p) for m in problem["members"] for t, parts in m.get("owned", {}).items() for p in parts]
    assert len(owned) == len(set(owned)) == sum(problem["topics"].values())
    assert problem["members"][-1] == {"id": "consumer-new", "topics": problem["members"][-1]["topics"]}
    # sent back unchanged, the group's optimum moves nothing
    del problem["members"][-1]
    assert solve_consumer(problem).stats.moves == 0


def test_rows_show_the_incremental_path_beside_the_full_flow(monkeypatch: pytest.MonkeyPatch) -> None:
    # its share of the flow's estimate widened: a loaded test machine must not decide the solver
    monkeypatch.setattr(stickyd.solvers.consumer.dispatch, "INCREMENTAL_SHARE_OF_FLOW", 100.0)
    lines = rows(((20_000, 200),), 1, ("stickyd",))
    assert len(lines) == 6
    cells = {tuple(c.strip() for c in line.strip("|").split("|")[2:4]): line for line in lines}
    leave = [c.strip() for c in cells[("unequal", "leave")].strip("|").split("|")]
    assert leave[4] == "incremental" and leave[5] == "yes" and leave[8] == "min-cost-flow", leave
    added = [c.strip() for c in cells[("unequal", "partitions-added")].strip("|").split("|")]
    assert added[4] == "incremental" and added[5] == "yes" and added[8] == "min-cost-flow", added
