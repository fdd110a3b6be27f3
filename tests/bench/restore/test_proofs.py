"""bench/restore/proofs.py: its applications (400 tasks x 10 clients, restore costs up to 10^9)
get valid answers proven optimal, and where the flows' actives leave the standbys worse than
they could be, the certificate's better target answers."""

from __future__ import annotations

import pytest

from bench.restore.proofs import KINDS, probe, row
from stickyd.models.streams.index import index_streams_problem
from stickyd.models.streams.problem import StreamsProblem
from stickyd.models.streams.validation import validate_streams_solution
from stickyd.solvers import solve_streams
from stickyd.solvers.streams.flow import solve_streams_flows
from stickyd.solvers.streams.result import standby_move_cost


@pytest.mark.parametrize("kind", KINDS)
def test_every_kind_of_application_is_answered_validly_and_proven(kind: str) -> None:
    problem = probe(kind, 400, 10, 0)
    solution = solve_streams(problem)
    assert validate_streams_solution(StreamsProblem.model_validate(problem), solution) == []
    assert solution.stats.optimal, solution.stats.warnings


def test_the_certificate_replaces_standbys_the_flows_left_worse() -> None:
    problem = probe("scrambled", 400, 10, 4)
    index = index_streams_problem(StreamsProblem.model_validate(problem))
    flows = solve_streams_flows(index)
    stats = solve_streams(problem).stats
    assert (stats.solver, stats.optimal) == ("cp-sat", True)
    assert stats.active_move_cost == index.cost_of(index.stateful & (index.prev_active >= 0)) - index.cost_of(
        index.stateful & (index.prev_active >= 0) & (flows.active == index.prev_active)
    )
    assert stats.standby_move_cost < standby_move_cost(index, flows)


def test_a_row_counts_the_proven_seeds() -> None:
    cells = [c.strip() for c in row("leave", 400, 10, 1).strip("|").split("|")]
    assert cells[:4] == ["400 x 10", "leave", "1/1", "min-cost-flow"]
