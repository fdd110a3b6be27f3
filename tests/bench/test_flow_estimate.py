"""bench.flow_estimate measures the optimal solver's flow on a Kafka-like group against the
dispatcher's estimate for it, and one request's job at a time limit (a smoke run at a small size:
the benchmark keeps working; speed itself is measured by the benchmark, not asserted here)."""

from __future__ import annotations

from bench.flow_estimate import flow_row, limit_row
from bench.layouts import contract_json_bytes, kafka_like_problem
from stickyd.solvers.consumer.flow_estimate import optimal_flow_s


def test_a_flow_row_reports_the_network_and_its_estimate() -> None:
    row = flow_row(12_000, 100, "sticky", "leave")
    assert row["units"] == 12_000
    assert 0 < row["arcs"] <= 100 * 10 + row["units"]  # (pool, member) + (class, claimant) arcs
    assert row["cpu_s"] > 0
    assert row["estimate_s"] == optimal_flow_s(row["arcs"], row["units"])


def test_a_limit_row_says_who_answered_the_job() -> None:
    problem = kafka_like_problem(12_000, 100, layout="sticky", shape="unequal", event="leave")
    row = limit_row(contract_json_bytes({**problem, "options": {"time_limit_ms": 10_000}}))
    assert row["solver"] == "min-cost-flow" and row["optimal"]
    assert row["seconds"] > 0
