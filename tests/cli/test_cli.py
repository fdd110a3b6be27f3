"""`stickyd solve consumer` prints the contract's response; bad input exits 2 with one line."""

from __future__ import annotations

import json
import subprocess
import sys

from tests.conftest import CONTRACT, assert_valid, load_example

STICKYD = [sys.executable, "-m", "cli"]


def _run(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*STICKYD, *args], input=stdin, capture_output=True, text=True, timeout=120)


def test_solve_consumer_file_prints_the_response_json() -> None:
    result = _run("solve", "consumer", str(CONTRACT / "consumer-kafka10121-join.json"))
    assert result.returncode == 0, result.stderr
    response = json.loads(result.stdout)
    assert response["stats"]["moves"] == 2
    from models import ConsumerSolution

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


def test_demo_prints_every_example_as_a_table() -> None:
    result = _run("demo")
    assert result.returncode == 0, result.stderr
    assert result.stdout.count("consumer group assignment") == 5
    assert result.stdout.count("streams task assignment") == 2
