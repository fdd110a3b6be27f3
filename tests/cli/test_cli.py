"""`stickyd solve consumer` prints the contract's response; bad input exits 2 with one line."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from tests.conftest import CONTRACT, assert_valid, load_example

STICKYD = [sys.executable, "-m", "stickyd.cli"]


def _run(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*STICKYD, *args], input=stdin, capture_output=True, text=True, timeout=120)


def test_solve_consumer_file_prints_the_response_json() -> None:
    result = _run("solve", "consumer", str(CONTRACT / "consumer-kafka10121-join.json"))
    assert result.returncode == 0, result.stderr
    response = json.loads(result.stdout)
    assert response["stats"]["moves"] == 2
    from stickyd.models import ConsumerSolution

    assert_valid(load_example("consumer-kafka10121-join.json"), ConsumerSolution.model_validate(response))


def test_solve_consumer_reads_stdin() -> None:
    result = _run("solve", "consumer", "-", stdin=json.dumps(load_example("consumer-kip54-equal.json")))
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["stats"]["optimal"] is True


def test_bad_input_exits_2_with_one_line_naming_the_field() -> None:
    problem = load_example("consumer-kip54-equal.json")
    problem["members"][1]["id"] = problem["members"][0]["id"]
    result = _run("solve", "consumer", "-", stdin=json.dumps(problem))
    assert result.returncode == 2
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "members[1].id" in lines[0] and "duplicate" in lines[0]


def test_invalid_json_and_missing_file_exit_2_without_traceback() -> None:
    for result in (_run("solve", "consumer", "-", stdin="{not json"), _run("solve", "consumer", "/nope.json")):
        assert result.returncode == 2
        assert "Traceback" not in result.stderr
        assert len(result.stderr.strip().splitlines()) == 1


def test_demo_prints_every_example_with_what_it_shows_and_before_after() -> None:
    from stickyd.cli.demo import DEMO_EXAMPLES

    result = _run("demo")
    assert result.returncode == 0, result.stderr
    flat = " ".join(result.stdout.split())
    assert result.stdout.count("consumer group assignment: before -> after") == 6
    assert result.stdout.count("streams task assignment: before -> target") == 2
    for example in DEMO_EXAMPLES:
        assert " ".join(example.shows.split()) in flat, example.shows
    assert "revoke now" in result.stdout and "kept" in result.stdout and "gained" in result.stdout


def test_table_of_a_cooperative_answer_shows_revocations_and_the_target() -> None:
    """The joiner of KAFKA-10121, cooperative: m1 and m2 revoke one partition each now; the table's
    `after` column is the target (the joiner's two partitions), not the empty first round."""
    problem = load_example("consumer-kafka10121-join.json")
    problem["options"] = {"protocol": "cooperative"}
    wide = {**os.environ, "COLUMNS": "200"}
    command = [*STICKYD, "solve", "consumer", "-", "--table"]
    result = subprocess.run(command, input=json.dumps(problem), capture_output=True, text=True, timeout=120, env=wide)
    assert result.returncode == 0, result.stderr
    rows = {line.split("│")[1].strip(): [c.strip() for c in line.split("│")[2:-1]]
            for line in result.stdout.splitlines() if line.startswith("│")}  # fmt: skip
    # columns: before, after, n, kept, gained, lost, revoke now, runs until follow-up
    assert rows["m1"] == ["t: 0,2,4", "t: 0,2", "2", "t: 0,2", "-", "t: 4", "t: 4", "t: 0,2"]
    assert rows["m2"] == ["t: 1,3,5", "t: 1,3", "2", "t: 1,3", "-", "t: 5", "t: 5", "t: 1,3"]
    assert rows["m3"] == ["-", "t: 4-5", "2", "-", "t: 4-5", "-", "-", "-"]
    assert "moves 2 of 6 owned (on the target) · load 2..2 (on the target)" in result.stdout
