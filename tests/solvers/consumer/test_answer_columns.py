"""The answer made from columns: the JSON bytes written straight from the arrays parse to the same
document as the pydantic dump of the materialised maps, and the lazy solution behaves as a plain
ConsumerSolution (stats without the maps, equality, copies, pickling)."""

from __future__ import annotations

import copy
import json
import pickle
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from stickyd.models import ConsumerSolution
from stickyd.solvers import solve_consumer
from stickyd.solvers.consumer.lazy_solution import LazyConsumerSolution
from tests.solvers.consumer.test_properties import consumer_problems

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(
    consumer_problems(),
    st.sampled_from(["optimal", "sticky", "range"]),
    st.sampled_from(["eager", "cooperative"]),
)
def test_answer_bytes_from_columns_equal_the_dumped_maps(problem: dict[str, Any], strategy: str, protocol: str) -> None:
    """answer_json() (before anything is materialised) == model_dump_json(), as JSON documents."""
    problem = {**problem, "options": {"strategy": strategy, "protocol": protocol}}
    solution = solve_consumer(problem)
    assert isinstance(solution, LazyConsumerSolution)
    written = json.loads(solution.answer_json())
    dumped = json.loads(solution.model_dump_json())
    assert written == dumped


def test_escaped_names_and_empty_members_are_written_as_pydantic_writes_them() -> None:
    """Quotes, backslashes and non-ASCII in member ids and topic names; a member with nothing."""
    problem = {
        "topics": {'t"1': 3, "tü\\2": 2, "unread": 4},
        "members": [
            {"id": 'a"b', "topics": ['t"1', "tü\\2"], "owned": {'t"1': [2], "gone": [0]}, "generation": 2},
            {"id": "ü", "topics": ["tü\\2"], "owned": {"tü\\2": [0, 1]}, "generation": 2},
            {"id": "idle", "topics": ["missing"]},
        ],
        "options": {"protocol": "cooperative"},
    }
    solution = solve_consumer(problem)
    assert isinstance(solution, LazyConsumerSolution)
    assert json.loads(solution.answer_json()) == json.loads(solution.model_dump_json())
    assert solution.assignment["idle"] == {}


def test_lazy_solution_reads_and_compares_as_a_plain_one() -> None:
    """Stats come without the maps; the maps, equality, copies and pickles match a plain model."""
    problem = {
        "topics": {"t": 4},
        "members": [{"id": "a", "topics": ["t"], "owned": {"t": [3]}}, {"id": "b", "topics": ["t"]}],
    }
    solution = solve_consumer(problem)
    assert isinstance(solution, LazyConsumerSolution)
    assert "assignment" not in solution.__dict__
    assert solution.stats.kept == 1
    plain = ConsumerSolution.model_validate(json.loads(solution.answer_json()))
    assert solution == plain
    assert 3 in solution.assignment["a"]["t"]
    assert pickle.loads(pickle.dumps(solution)) == plain
    assert copy.deepcopy(solution) == plain
    assert solution.model_dump() == plain.model_dump()
