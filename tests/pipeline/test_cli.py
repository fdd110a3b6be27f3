"""`stickyd pipeline ...` as an operator runs it: generate, plan and replay end to end, clear refusals."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

STICKYD = [sys.executable, "-m", "cli"]


def run(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*STICKYD, *args], capture_output=True, text=True, timeout=timeout, check=False)


def test_generate_plan_replay_end_to_end(tmp_path: Path) -> None:
    made = run("pipeline", "generate", str(tmp_path), "--groups", "25", "--traces", "4", "--events", "5")
    assert made.returncode == 0, made.stderr
    assert "25 groups" in made.stderr and "4 traces of 5 events" in made.stderr
    planned = run("pipeline", "plan", str(tmp_path / "fleet.jsonl"), "--out", str(tmp_path / "plan"),
                  "--metrics", str(tmp_path / "metrics.parquet"), "--master", "local[2]")  # fmt: skip
    assert planned.returncode == 0, planned.stderr
    assert "25 groups planned, 0 rows rejected" in planned.stderr
    for output in ("stats", "assignments", "errors", "member_traffic", "report.md", "plan.png"):
        assert (tmp_path / "plan" / output).exists(), output
    replayed = run("pipeline", "replay", str(tmp_path / "traces.jsonl"), "--out", str(tmp_path / "replay"),
                   "--strategy", "optimal", "--strategy", "range", "--master", "local[2]")  # fmt: skip
    assert replayed.returncode == 0, replayed.stderr
    assert "4 traces, 48 rebalances, 0 rejected" in replayed.stderr
    wrong = run("pipeline", "plan", str(tmp_path / "fleet.jsonl"), "--metrics", str(tmp_path / "plan" / "stats"),
                "--master", "local[1]")  # fmt: skip
    assert wrong.returncode == 2 and "Traceback" not in wrong.stderr
    assert "stickyd: traffic metrics: missing column(s) topic, partition, minute, records, bytes" in wrong.stderr


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
