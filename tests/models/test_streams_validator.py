"""The Streams validator shown wrong answers: each test breaks a correct answer in exactly one
way (one rule of docs/wire-format.md's Streams assignment) and asserts that the validator names it. A validator
that always said "valid" fails every test here."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from stickyd.models.streams.index import index_streams_problem
from stickyd.models.streams.problem import StreamsProblem, StreamsSolution
from stickyd.models.streams.validation import target_violations, validate_streams_solution
from stickyd.solvers import solve_streams

PROBLEM: dict[str, Any] = {
    "subtopologies": [{"id": "0", "partitions": 6, "stateful": True}, {"id": "1", "partitions": 4, "stateful": False}],
    "clients": [
        {"id": "m1", "active": ["0_0", "0_2", "0_4", "1_0", "1_1"], "standby": ["0_1", "0_3"]},
        {"id": "m2", "active": ["0_1", "0_3", "0_5", "1_2", "1_3"], "standby": ["0_0", "0_2", "0_4"]},
        {"id": "m3"},
    ],
    "config": {"num_standby_replicas": 1, "max_warmup_replicas": 2, "acceptable_recovery_lag": 100},
}

Answer = dict[str, Any]


@pytest.fixture(scope="module")
def correct() -> Answer:
    """The solver's answer: a join (m3) with warm-ups, standbys and a follow-up rebalance."""
    solution = solve_streams(PROBLEM)
    assert validate_streams_solution(StreamsProblem.model_validate(PROBLEM), solution) == []
    answer = solution.model_dump()
    assert answer["followup_rebalance"] and answer["stats"]["warmups"] == 2
    return answer


def violations(answer: Answer, problem: dict[str, Any] | None = None) -> list[str]:
    model = StreamsProblem.model_validate(problem or PROBLEM)
    return validate_streams_solution(model, StreamsSolution.model_validate(answer))


def broken(correct: Answer, change: Callable[[Answer], None]) -> list[str]:
    answer = copy.deepcopy(correct)
    change(answer)
    return violations(answer)


def _named(found: list[str], phrase: str) -> None:
    assert any(phrase in v for v in found), found


def _owner(answer: Answer, task: str, where: str = "target") -> str:
    return next(c for c, parts in answer[where].items() if task in parts["active"])


def _standby_holder(answer: Answer) -> tuple[str, str]:
    """(client, task) of some target standby."""
    return next((c, parts["standby"][0]) for c, parts in answer["target"].items() if parts["standby"])


def _order(tasks: list[str]) -> list[str]:
    return sorted(tasks, key=lambda t: (t.split("_")[0], int(t.split("_")[1])))


def test_the_correct_answer_passes(correct: Answer) -> None:
    assert violations(correct) == []


def test_unknown_client_in_target_is_named(correct: Answer) -> None:
    _named(broken(correct, lambda a: a["target"].update(ghost={"active": [], "standby": []})), "target: clients")


def test_missing_client_in_assignment_is_named(correct: Answer) -> None:
    _named(broken(correct, lambda a: a["assignment"].pop("m3")), "assignment: clients missing or unknown")


def test_unknown_task_in_target_is_named(correct: Answer) -> None:
    _named(broken(correct, lambda a: a["target"]["m3"]["active"].append("7_0")), "unknown task 7_0")


def test_unknown_task_in_assignment_is_named_not_raised(correct: Answer) -> None:
    """Used to raise KeyError: an unknown task in what runs now is a reported violation."""
    _named(broken(correct, lambda a: a["assignment"]["m3"]["active"].append("7_0")), "unknown task 7_0")


def test_unsorted_target_list_is_named(correct: Answer) -> None:
    _named(broken(correct, lambda a: a["target"]["m1"]["active"].reverse()), "not sorted or has duplicates")


def test_unsorted_running_list_is_named(correct: Answer) -> None:
    _named(broken(correct, lambda a: a["assignment"]["m1"]["active"].reverse()), "not sorted or has duplicates")


def test_task_active_on_two_clients_in_target_is_named(correct: Answer) -> None:
    def twice(a: Answer) -> None:
        task = a["target"]["m1"]["active"][0]
        a["target"]["m2"]["active"] = _order([*a["target"]["m2"]["active"], task])

    _named(broken(correct, twice), "active on two clients")


def test_task_with_no_active_is_named(correct: Answer) -> None:
    def dropped(a: Answer) -> None:
        a["target"]["m1"]["active"].pop(0)

    _named(broken(correct, dropped), "some task has no active client")


def test_missing_standby_replica_is_named(correct: Answer) -> None:
    def lose(a: Answer) -> None:
        client, task = _standby_holder(a)
        a["target"][client]["standby"].remove(task)
        a["assignment"][client]["standby"] = [t for t in a["assignment"][client]["standby"] if t != task]

    _named(broken(correct, lose), "has 0 standbys")


def test_standby_on_a_stateless_task_is_named(correct: Answer) -> None:
    def extra(a: Answer) -> None:
        holder = next(c for c in a["target"] if "1_0" not in a["target"][c]["active"])
        a["target"][holder]["standby"] = _order([*a["target"][holder]["standby"], "1_0"])

    _named(broken(correct, extra), "1_0 has 1 standbys")


def test_standby_beside_its_active_is_named(correct: Answer) -> None:
    def beside(a: Answer) -> None:
        client, task = _standby_holder(a)
        owner = _owner(a, task)
        a["target"][client]["standby"].remove(task)
        a["target"][owner]["standby"] = _order([*a["target"][owner]["standby"], task])

    _named(broken(correct, beside), "a standby beside its own active")


def test_running_active_on_two_clients_is_named(correct: Answer) -> None:
    def twice(a: Answer) -> None:
        task = a["assignment"]["m1"]["active"][0]
        a["assignment"]["m2"]["active"] = _order([*a["assignment"]["m2"]["active"], task])

    _named(broken(correct, twice), "assignment: 0_0 active on two clients")


def test_task_running_nowhere_is_named(correct: Answer) -> None:
    _named(broken(correct, lambda a: a["assignment"]["m1"]["active"].pop(0)), "some task runs nowhere")


def test_task_kept_off_target_without_warm_state_is_named(correct: Answer) -> None:
    """A stateless task run somewhere else than its target: no state justifies it."""

    def moved(a: Answer) -> None:
        owner = _owner(a, "1_0", "assignment")
        other = next(c for c in a["assignment"] if c != owner)
        a["assignment"][owner]["active"].remove("1_0")
        a["assignment"][other]["active"] = _order([*a["assignment"][other]["active"], "1_0"])

    _named(broken(correct, moved), "1_0 kept off its target without a warm-state reason")


def test_warmup_where_not_targeted_is_named(correct: Answer) -> None:
    def misplaced(a: Answer) -> None:
        task = a["assignment"]["m3"]["warmup"].pop()
        a["assignment"]["m2"]["warmup"] = [task]

    _named(broken(correct, misplaced), "warms up where it is not targeted")


def test_warmups_over_budget_are_named(correct: Answer) -> None:
    tighter = copy.deepcopy(PROBLEM)
    tighter["config"]["max_warmup_replicas"] = 1
    _named(violations(correct, tighter), "warm-ups exceed max_warmup_replicas")


def test_running_standbys_differing_from_target_are_named(correct: Answer) -> None:
    def forgotten(a: Answer) -> None:
        client = next(c for c, parts in a["assignment"].items() if parts["standby"])
        a["assignment"][client]["standby"] = []

    _named(broken(correct, forgotten), "differs from the target's standbys")


def test_wrong_followup_flag_is_named(correct: Answer) -> None:
    _named(broken(correct, lambda a: a.update(followup_rebalance=False)), "followup_rebalance")


@pytest.mark.parametrize(
    ("field", "phrase"),
    [
        (("warmups",), "stats.warmups"),
        (("active_moves",), "stats.active_moves"),
        (("standby_moves",), "stats.standby_moves"),
        (("balance", "active"), "stats.balance.active"),
        (("balance", "stateful"), "stats.balance.stateful"),
        (("balance", "subtopology_spread"), "stats.balance.subtopology_spread"),
    ],
)
def test_wrong_stat_is_named(correct: Answer, field: tuple[str, ...], phrase: str) -> None:
    def off_by_one(a: Answer) -> None:
        node = a["stats"]
        for key in field[:-1]:
            node = node[key]
        value = node[field[-1]]
        node[field[-1]] = [value[0], value[1] + 1] if isinstance(value, list) else value + 1

    _named(broken(correct, off_by_one), phrase)


COSTED: dict[str, Any] = {
    **PROBLEM,
    "task_costs": {"0_0": 7, "0_1": 300, "0_2": 0, "0_3": 12, "0_4": 5, "0_5": 40},
    "options": {"stickiness": "restore_cost"},
}


@pytest.fixture(scope="module")
def costed() -> Answer:
    """The solver's answer with restore costs: the join moves actives and standbys of known cost."""
    answer = solve_streams(COSTED).model_dump()
    assert violations(answer, COSTED) == []
    assert answer["stats"]["active_move_cost"] > 0 and answer["stats"]["standby_move_cost"] > 0
    return answer


@pytest.mark.parametrize("field", ["active_move_cost", "standby_move_cost"])
def test_wrong_restore_cost_stat_is_named(costed: Answer, field: str) -> None:
    for wrong in (costed["stats"][field] + 1, costed["stats"][field] - 1, None):
        answer = copy.deepcopy(costed)
        answer["stats"][field] = wrong
        _named(violations(answer, COSTED), f"stats.{field}")


@pytest.mark.parametrize("field", ["active_move_cost", "standby_move_cost"])
def test_restore_cost_stat_without_restore_cost_is_named(correct: Answer, field: str) -> None:
    _named(broken(correct, lambda a: a["stats"].update({field: 0})), f"stats.{field}")


def test_restore_cost_stats_count_costs_not_moves(costed: Answer) -> None:
    """A figure equal to the number of moves, not their summed costs, is wrong."""
    answer = copy.deepcopy(costed)
    answer["stats"]["active_move_cost"] = answer["stats"]["active_moves"]
    _named(violations(answer, COSTED), "stats.active_move_cost")


def test_optimal_fallback_is_named(correct: Answer) -> None:
    _named(
        broken(correct, lambda a: a["stats"].update(optimal=True, fallback=True)), "a fallback answer cannot be optimal"
    )


# target_violations works on arrays (the dispatcher checks a solver's target with it before
# building the answer); the rules that the name-level checks above catch first are shown here.

INDEX = index_streams_problem(StreamsProblem.model_validate({**PROBLEM, "config": {"num_standby_replicas": 2}}))


def _arrays() -> tuple[np.ndarray, np.ndarray]:
    active = np.array([0, 1, 2, 0, 1, 2, 0, 1, 2, 0], dtype=np.int64)
    standby = np.full((INDEX.task_count, 2), -1, dtype=np.int64)
    for t in range(6):
        standby[t] = sorted({0, 1, 2} - {int(active[t])})
    assert target_violations(INDEX, active, standby) == []
    return active, standby


def test_arrays_two_standbys_of_one_task_on_one_client_are_named() -> None:
    active, standby = _arrays()
    standby[0] = [1, 1]
    _named(target_violations(INDEX, active, standby), "two standbys of one task on one client")


def test_arrays_standby_of_a_stateless_task_is_named() -> None:
    active, standby = _arrays()
    standby[7] = [0, 2]
    _named(target_violations(INDEX, active, standby), "a stateless task has a standby")


def test_arrays_stateful_task_without_enough_replicas_is_named() -> None:
    active, standby = _arrays()
    standby[2, 1] = -1
    _named(target_violations(INDEX, active, standby), "lacks a standby replica")


def test_arrays_standby_beside_active_is_named() -> None:
    active, standby = _arrays()
    standby[0] = [0, 1]
    _named(target_violations(INDEX, active, standby), "a standby beside its own active")


def test_arrays_task_without_active_and_wrong_shape_are_named() -> None:
    active, standby = _arrays()
    active[3] = -1
    _named(target_violations(INDEX, active, standby), "some task has no active client")
    _named(target_violations(INDEX, _arrays()[0], standby[:, :1]), "standbys shaped")
