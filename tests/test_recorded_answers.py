"""The service's answers are pinned byte for byte: the contract's examples and 250 seeded random
consumer and Streams requests, recorded once (`tests/record_answers.py`), are answered again and
compared, `stats.time_ms` aside. A refactoring that changes any answer fails here."""

import gzip
import json

import pytest

from tests.record_answers import RECORDING, answer

with gzip.open(RECORDING, "rt", encoding="utf-8") as recording:
    ROWS = json.load(recording)


def test_the_recording_covers_both_problems_and_every_strategy() -> None:
    kinds = [row["kind"] for row in ROWS]
    assert kinds.count("consumer") >= 100 and kinds.count("streams") >= 100
    solvers = {json.loads(row["answer"])["stats"]["solver"] for row in ROWS}
    assert {"min-cost-flow", "cp-sat", "kip54-sticky", "range", "roundrobin", "greedy"} <= solvers


@pytest.mark.parametrize("row", ROWS, ids=[f"{i}-{row['kind']}" for i, row in enumerate(ROWS)])
def test_answer_is_byte_identical_to_the_recording(row: dict) -> None:
    status, body = answer(row["kind"], row["request"])
    assert status == row["status"]
    assert body == row["answer"]
