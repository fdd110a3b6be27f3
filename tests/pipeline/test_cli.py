"""`stickyd pipeline ...` as an operator runs it: generate, plan and replay end to end, clear refusals."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.pipeline.standalone_cluster import SHORT_LIVED_JVM

STICKYD = [sys.executable, "-m", "stickyd.cli"]


def run(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    # Spark's driver JVM lives a minute here: the quick compiler alone (its output goes to spark.log)
    env = {**os.environ, "JAVA_TOOL_OPTIONS": SHORT_LIVED_JVM}
    return subprocess.run([*STICKYD, *args], capture_output=True, text=True, timeout=timeout, check=False, env=env)


def test_generate_plan_replay_end_to_end(tmp_path: Path) -> None:
    """An operator's run: stickyd's own lines only (each stamped, on its own line; Spark's log and
    JVM warnings in OUT/spark.log), `group_id` in every output, rejected rows by line number."""
    made = run("pipeline", "generate", str(tmp_path), "--groups", "25", "--traces", "4", "--events", "5")
    assert made.returncode == 0, made.stderr
    assert "25 groups" in made.stderr and "4 traces of 5 events" in made.stderr
    fleet = tmp_path / "fleet.jsonl"
    fleet.write_text(fleet.read_text() + '{"kind": "consumer", "problem": {}}\n')  # line 26: no group_id
    planned = run("pipeline", "plan", str(fleet), "--out", str(tmp_path / "plan"),
                  "--metrics", str(tmp_path / "metrics.parquet"), "--master", "local[2]")  # fmt: skip
    assert planned.returncode == 0, planned.stderr
    assert "25 groups planned, 1 rows rejected" in planned.stderr
    assert "rejected line 26 (no group_id): group_id: required: a non-empty string" in planned.stderr
    lines = planned.stderr.splitlines()
    assert all(re.match(r"\d\d:\d\d:\d\d ", line) for line in lines), planned.stderr
    for noise in ("WARN", "NativeCodeLoader", "loopback address", "[Stage", "\r", "log4j"):
        assert noise not in planned.stderr, noise
    for output in ("stats", "assignments", "errors", "member_traffic", "report.md", "plan.png", "spark.log"):
        assert (tmp_path / "plan" / output).exists(), output
    for output in ("stats", "assignments", "member_traffic"):
        assert "group_id" in pq.read_schema(next((tmp_path / "plan" / output).glob("*.parquet"))).names, output
    assert "| 26 | (no group_id) | group_id | required" in (tmp_path / "plan" / "report.md").read_text()
    replayed = run("pipeline", "replay", str(tmp_path / "traces.jsonl"), "--out", str(tmp_path / "replay"),
                   "--strategy", "optimal", "--strategy", "range", "--master", "local[2]")  # fmt: skip
    assert replayed.returncode == 0, replayed.stderr
    assert "4 traces, 48 rebalances, 0 rejected" in replayed.stderr


NO_JAVA = {**os.environ, "PATH": "/nonexistent", "JAVA_HOME": "/nonexistent"}
"""An environment where Spark cannot start: a refusal seen here was made before Spark."""


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (
            ("--metrics", "FLEET"),
            "stickyd: --metrics: FLEET: missing column(s) topic, partition, minute, records, "
            "bytes (need topic, partition, minute, records, bytes; it has group_id, kind, "
            "problem)",
        ),
        (("--metrics", "STATS"), "stickyd: --metrics: STATS: missing column(s) topic, partition, minute, records"),
        (("--service", "http://127.0.0.1:9"), "stickyd: --service http://127.0.0.1:9: no answer from /v1/health"),
    ],
    ids=["metrics-jsonl", "metrics-parquet", "service-down"],
)
def test_wrong_inputs_are_refused_before_spark_starts(tmp_path: Path, extra: tuple[str, ...], message: str) -> None:
    """The wrong metrics file (JSON lines or Parquet) exits 2 naming the missing columns, and an
    unreachable --service exits 2, without Spark (no Java in reach, no spark.log written)."""
    fleet = tmp_path / "fleet.jsonl"
    fleet.write_text('{"group_id": "g", "kind": "consumer", "problem": {"topics": {}, "members": []}}\n')
    stats = tmp_path / "stats"
    stats.mkdir()
    pq.write_table(pa.table({"group_id": ["g"], "moves": [1]}), stats / "part-0.parquet")
    names = {"FLEET": str(fleet), "STATS": str(stats)}
    args = [names.get(a, a) for a in extra]
    started = time.monotonic()
    result = subprocess.run([*STICKYD, "pipeline", "plan", str(fleet), "--out", str(tmp_path / "out"), *args],
                            capture_output=True, text=True, timeout=60, env=NO_JAVA, check=False)  # fmt: skip
    took = time.monotonic() - started
    expected = message.replace("FLEET", str(fleet)).replace("STATS", str(stats))
    assert result.returncode == 2 and result.stderr.startswith(expected), result.stderr
    assert len(result.stderr.strip().splitlines()) == 1 and not (tmp_path / "out").exists()
    print(f"refused in {took:.2f} s")  # measured, not asserted (a shared machine): README, "Refusals"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("plan", "/nope/fleet.jsonl"), "stickyd: snapshot: /nope/fleet.jsonl: no such file or directory"),
        (("replay", "/nope/t.jsonl"), "stickyd: traces: /nope/t.jsonl: no such file or directory"),
        (("replay", __file__, "--strategy", "fastest"), "stickyd: --strategy: unknown fastest"),
    ],
)
def test_refusals_are_one_line_naming_the_input(args: tuple[str, ...], message: str) -> None:
    result = run("pipeline", *args, timeout=60)
    assert result.returncode == 2
    assert result.stderr.strip().startswith(message) and "Traceback" not in result.stderr


def test_spark_submit_script_runs_the_same_cli() -> None:
    """`spark-submit cli/submit.py pipeline plan ... --master submit` (README: on a cluster)."""
    script = Path(__file__).resolve().parents[2] / "cli" / "submit.py"
    result = subprocess.run(
        [sys.executable, str(script), "pipeline", "plan", "--help"], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    assert "--master" in result.stdout and "spark-submit" in result.stdout
