"""bench/limits.py keeps working: its tiny size classes, alone and two at once, against a real
`stickyd serve` give rows of valid 200 answers with times, the floor and the promise, the service's
peak RSS, and a report that states the load average and the misses (timings are the benchmark's
business, not asserted here)."""

from __future__ import annotations

from bench.limit_cases import SIZE_CLASSES, Validator, with_time_limit
from bench.limits import limits_report, run_row
from stickyd.cli.child_service import ServiceProcess
from stickyd.solvers import solve_consumer


def test_tiny_classes_give_rows_of_valid_answers_and_a_report_with_load_and_misses(service: ServiceProcess) -> None:
    rows = []
    for name in ("consumer-tiny", "streams-tiny"):
        size = SIZE_CLASSES[name]
        problem = size.problem()
        validator = Validator(size.kind, problem)
        for at_once in (1, 2):
            rows.append(run_row(service, size, problem, validator, 200, at_once))
    for row in rows:
        assert [a.status for a in row.answers] == [200] * row.concurrency
        assert row.invalid == 0
        assert row.floor_ms == 0  # tiny sizes have no floor
        assert row.promise_ms == 200 + row.margin_ms
        assert row.worst_ms > 0 and row.peak_sum_kb >= row.peak_one_kb > 0
    text = limits_report(rows, "0.1/0.1/0.1", {"STICKYD_AUTH": "off"})
    assert "load average (1/5/15 min) 0.1/0.1/0.1" in text
    assert text.count("| consumer-tiny |") == 2 and text.count("| streams-tiny |") == 2
    assert ("No misses." in text) == (not any(row.misses for row in rows))


def test_a_validator_rejects_an_answer_that_drops_a_partition() -> None:
    size = SIZE_CLASSES["consumer-tiny"]
    problem = size.problem()
    validator = Validator("consumer", problem)
    solution = solve_consumer(problem)
    assert validator.violations(solution.model_dump_json().encode()) == []
    member = next(m for m, topics in solution.assignment.items() if topics)
    topic = next(iter(solution.assignment[member]))
    solution.assignment[member][topic] = solution.assignment[member][topic][1:]
    assert validator.violations(solution.model_dump_json().encode())
    assert with_time_limit(problem, 50).endswith(b'"options":{"time_limit_ms":50}}')
