"""`plan` on a real local SparkSession: the same answers as direct solver calls, in both modes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from pyspark.sql import SparkSession

from stickyd.cli.child_service import ServiceProcess
from stickyd.pipeline.generate import write_parquet
from stickyd.pipeline.plan import PlanOptions, plan
from stickyd.pipeline.rows import consumer_result, parse_row, streams_result
from stickyd.pipeline.solving import ServiceUnavailable
from stickyd.pipeline.spark import to_pandas
from stickyd.solvers import solve_consumer, solve_streams
from tests.pipeline.conftest import BAD_ROWS, SMALL_FLEET, contract_rows

STATS = ["group_id", "kind", "strategy", "solver", "optimal", "fallback", "moves", "standby_moves", "owned",
         "members", "partitions", "min_load", "max_load", "balance"]  # fmt: skip


SOLVED = SMALL_FLEET.groups + len(contract_rows())
"""the generated groups and the contract's examples; the malformed rows are rejected."""


def direct_answers(fleet: Path, limit_ms: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Stats and assignment rows from calling solve_consumer/solve_streams on each good row."""
    stats: list[dict[str, Any]] = []
    rows: list[dict[str, Any]] = []
    for number, raw in enumerate(fleet.read_text().splitlines(), start=1):
        if raw in {bad for bad, _ in BAD_ROWS}:
            continue
        fleet_row = parse_row(number, raw, limit_ms)
        if fleet_row.kind == "consumer":
            result = consumer_result(fleet_row, solve_consumer(fleet_row.problem))  # type: ignore[arg-type]
        else:
            result = streams_result(fleet_row, solve_streams(fleet_row.problem))  # type: ignore[arg-type]
        stats.append(result.record())
        rows += [{"group_id": fleet_row.group_id, **a} for a in result.assignment]
    return pd.DataFrame(stats)[STATS], pd.DataFrame(rows)


def sorted_frame(frame: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    return frame.sort_values(keys).reset_index(drop=True)


def read_outputs(spark: SparkSession, out: Path) -> tuple[pd.DataFrame, pd.DataFrame, list[dict[str, Any]]]:
    stats = to_pandas(spark.read.parquet(str(out / "stats")))[STATS]
    assignments = to_pandas(spark.read.parquet(str(out / "assignments")))
    errors = [json.loads(line) for f in sorted((out / "errors").glob("*.json")) for line in f.read_text().splitlines()]
    return stats, assignments, errors


@pytest.fixture(scope="module")
def in_process(spark: SparkSession, fleet_file: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("plan")
    plan(spark, PlanOptions(snapshot=str(fleet_file), out=out, time_limit_ms=10_000))
    return out


def test_executor_plan_equals_direct_solver_calls(spark: SparkSession, fleet_file: Path, in_process: Path) -> None:
    """Every group solved in the executors gets exactly what solve_consumer/solve_streams give it."""
    stats, assignments, _ = read_outputs(spark, in_process)
    want_stats, want_rows = direct_answers(fleet_file, 10_000)
    assert len(stats) == len(want_stats) == SOLVED
    pd.testing.assert_frame_equal(sorted_frame(stats, ["group_id"]), sorted_frame(want_stats, ["group_id"]))
    keys = ["group_id", "member", "topic", "partition", "role"]
    pd.testing.assert_frame_equal(sorted_frame(assignments[keys], keys), sorted_frame(want_rows[keys], keys))


def test_malformed_rows_land_in_errors_with_their_reason(spark: SparkSession, in_process: Path) -> None:
    """Bad rows are reported with line number, group and field; the rest of the fleet is still planned."""
    stats, _, errors = read_outputs(spark, in_process)
    assert [e["error_field"] for e in errors] == [field for _, field in BAD_ROWS]
    assert [e["row"] for e in errors] == [6, 7, 8, 9, 10]
    assert errors[0]["group_id"] == "dup" and "duplicate member id 'x'" in errors[0]["error_reason"]
    assert errors[1]["raw"] == "this is not json"
    assert "dup" not in set(stats["group_id"])


def test_report_has_chart_and_fleet_totals(in_process: Path) -> None:
    report = (in_process / "report.md").read_text()
    assert "- rows rejected: 5" in report and f"- groups solved: {SOLVED}" in report
    assert (in_process / "plan.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # rejected rows by line number; a row without a group says so (never `None`)
    assert "| line | group_id | field | reason |" in report
    assert "| 6 | dup | problem.members[1].id |" in report and "| 8 | (no group_id) | group_id |" in report
    assert "None" not in report


def test_every_group_not_proven_or_unbalanced_says_what_limits_it(spark: SparkSession, in_process: Path) -> None:
    """`limited_by` is empty exactly for proven optima with loads at most one apart, and the report
    lists each of the others with its reason."""
    stats = to_pandas(spark.read.parquet(str(in_process / "stats")))
    limited = stats[~stats["optimal"] | (stats["balance"] > 1)]
    assert len(limited) > 0  # the fleet has unequal subscriptions and Streams proofs that stop short
    assert (limited["limited_by"].str.len() > 0).all(), limited[["group_id", "limited_by"]]
    assert (stats.drop(limited.index)["limited_by"] == "").all()
    for row in limited.itertuples():
        if not row.optimal:
            assert row.limited_by.startswith(("not proven optimal: ", "fell back: ", "strategy ")), row
        else:
            assert row.limited_by.startswith("proven optimal: "), row
    report = (in_process / "report.md").read_text()
    assert f"## Groups not proven optimal or not balanced ({len(limited)} of {len(stats)}" in report
    for row in limited.itertuples():
        assert f"| {row.group_id} |" in report and row.limited_by in report


def test_service_mode_gives_the_same_answers(
    spark: SparkSession, fleet_file: Path, in_process: Path, service: ServiceProcess, tmp_path: Path
) -> None:
    """The driver fetching assignments from a real `stickyd serve` writes what the executors wrote."""
    summary = plan(
        spark,
        PlanOptions(snapshot=str(fleet_file), out=tmp_path, service=service.url, time_limit_ms=10_000,
                    batch_size=8, report_format="html"),
    )  # fmt: skip
    assert (summary.solved, summary.rejected) == (SOLVED, 5)
    assert summary.first_rejected == (
        "line 6 (dup): problem.members[1].id: duplicate member id 'x' (also members[0])",
        "line 7 (no group_id): row: not valid JSON (Expecting value at column 1)",
        "line 8 (no group_id): group_id: required: a non-empty string",
    )
    stats, assignments, errors = read_outputs(spark, tmp_path)
    want_stats, want_assignments, want_errors = read_outputs(spark, in_process)
    pd.testing.assert_frame_equal(sorted_frame(stats, ["group_id"]), sorted_frame(want_stats, ["group_id"]))
    keys = list(assignments.columns)
    pd.testing.assert_frame_equal(sorted_frame(assignments, keys), sorted_frame(want_assignments, keys))
    assert [(e["row"], e["error_field"]) for e in errors] == [(e["row"], e["error_field"]) for e in want_errors]
    html = (tmp_path / "report.html").read_text()
    assert "data:image/png;base64," in html and service.url in html


def test_service_down_is_a_clear_error(spark: SparkSession, fleet_file: Path, tmp_path: Path) -> None:
    with pytest.raises(ServiceUnavailable, match="--service http://127.0.0.1:9: no answer"):
        plan(spark, PlanOptions(snapshot=str(fleet_file), out=tmp_path, service="http://127.0.0.1:9"))


def test_parquet_snapshot_and_traffic_shares(spark: SparkSession, tmp_path: Path) -> None:
    """A Parquet snapshot (problem as JSON text) and metrics give each member its share of bytes/s."""
    members = [{"id": "a", "topics": ["clicks"]}, {"id": "b", "topics": ["clicks"]}]
    problem = {"topics": {"clicks": 4}, "members": members, "options": {"strategy": "range"}}
    write_parquet(tmp_path / "fleet.parquet", iter([{"group_id": "g", "kind": "consumer", "problem": problem}]),
                  stringify=("problem",))  # fmt: skip
    # range gives a 0-1 and b 2-3; partition 0 is hot: 2 minutes x 600 bytes, the others 2 x 120
    metrics = [
        {"topic": "clicks", "partition": p, "minute": pd.Timestamp("2026-11-01 00:00") + pd.Timedelta(minutes=m),
         "records": 10, "bytes": 600 if p == 0 else 120}
        for p in range(4) for m in range(2)
    ]  # fmt: skip
    write_parquet(tmp_path / "metrics.parquet", iter(metrics))
    out = tmp_path / "out"
    summary = plan(spark, PlanOptions(snapshot=str(tmp_path / "fleet.parquet"), out=out,
                                      metrics=str(tmp_path / "metrics.parquet")))  # fmt: skip
    assert (summary.solved, summary.rejected) == (1, 0)
    traffic = to_pandas(spark.read.parquet(str(out / "member_traffic"))).set_index("member").sort_index()
    # a: (1200 + 240) bytes / 120 s = 12 B/s, b: 480 / 120 = 4 B/s
    assert traffic["bytes_per_s"].tolist() == pytest.approx([12.0, 4.0])
    assert traffic["share"].tolist() == pytest.approx([0.75, 0.25])
    assert traffic["skew"].tolist() == pytest.approx([1.5, 0.5])
    assert traffic["partitions"].tolist() == [2, 2]
