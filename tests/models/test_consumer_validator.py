"""The consumer validators shown wrong answers: each test breaks a correct answer in exactly
one way (one rule of docs/wire-format.md's consumer assignment) and asserts that `validate_consumer_solution`
or `unit_violations` names it. A validator that always said "valid" fails every test here."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from stickyd.models import ConsumerProblem, ConsumerSolution, index_consumer_problem, validate_consumer_solution
from stickyd.models.consumer.validation import unit_violations
from stickyd.solvers import solve_consumer

JOIN: dict[str, Any] = {
    "topics": {"a": 4, "b": 5, "c": 3},
    "copartitioned": [["a", "b"]],
    "members": [
        {"id": "m0", "topics": ["a", "b", "c"], "owned": {"a": [0, 1], "b": [0, 1], "c": [0]}, "generation": 3},
        {"id": "m1", "topics": ["a", "b"], "owned": {"a": [2], "b": [2]}, "generation": 3},
        {"id": "m2", "topics": ["c"]},
        {"id": "m3", "topics": ["a"]},
    ],
}
"""A join of a and b (b's partition 4 beyond the join stays unassigned), a plain topic c, and
m3 reading only a (so it may take no unit of the join)."""

COOPERATIVE: dict[str, Any] = {
    "topics": {"t": 6},
    "members": [
        {"id": "m0", "topics": ["t"], "owned": {"t": [0, 1, 2, 3, 4, 5]}, "generation": 2},
        {"id": "m1", "topics": ["t"]},
    ],
    "options": {"protocol": "cooperative"},
}
"""m1 joins: m0 revokes three partitions now, m1 gets them in the follow-up round."""

Answer = dict[str, Any]


def _correct(problem: dict[str, Any]) -> Answer:
    solution = solve_consumer(problem)
    assert validate_consumer_solution(ConsumerProblem.model_validate(problem), solution) == []
    return solution.model_dump()


@pytest.fixture(scope="module")
def join() -> Answer:
    answer = _correct(JOIN)
    assert answer["assignment"]["m0"]["a"] == [0, 1] and answer["unassigned"] == {"b": [4]}
    return answer


@pytest.fixture(scope="module")
def cooperative() -> Answer:
    answer = _correct(COOPERATIVE)
    assert answer["revoke"]["m0"] == {"t": [3, 4, 5]} and answer["target"]["m1"] == {"t": [3, 4, 5]}
    return answer


def broken(correct: Answer, change: Callable[[Answer], None], problem: dict[str, Any] = JOIN) -> list[str]:
    answer = copy.deepcopy(correct)
    change(answer)
    return validate_consumer_solution(ConsumerProblem.model_validate(problem), ConsumerSolution.model_validate(answer))


def _named(found: list[str], phrase: str) -> None:
    assert any(phrase in v for v in found), found


def test_partition_assigned_twice_is_named(join: Answer) -> None:
    _named(broken(join, lambda a: a["assignment"]["m0"].update(c=[0])), "partitions [0] given to two members")


def test_partition_given_to_a_non_subscriber_is_named(join: Answer) -> None:
    def stray(a: Answer) -> None:
        a["assignment"]["m2"]["c"].remove(2)
        a["assignment"]["m1"]["c"] = [2]

    _named(broken(join, stray), "assignment.m1.c: member does not subscribe to c")


def test_partition_missing_is_named(join: Answer) -> None:
    _named(
        broken(join, lambda a: a["assignment"]["m2"]["c"].pop()), "c: partitions [2] neither assigned nor unassigned"
    )


@pytest.mark.parametrize(
    ("partitions", "why"), [([2, 1, 0], "unsorted"), ([0, 1, 3], "out of range"), ([0, 1, 1, 2], "duplicate")]
)
def test_partition_list_unsorted_duplicated_or_out_of_range_is_named(
    join: Answer, partitions: list[int], why: str
) -> None:
    _named(broken(join, lambda a: a["assignment"]["m2"].update(c=partitions)), "sorted, unique and in range")


def test_unknown_or_missing_member_is_named(join: Answer) -> None:
    _named(broken(join, lambda a: a["assignment"].update(ghost={})), "members ['ghost'] missing or unknown")
    _named(broken(join, lambda a: a["assignment"].pop("m3")), "members ['m3'] missing or unknown")


def test_join_unit_split_across_members_is_named(join: Answer) -> None:
    def split(a: Answer) -> None:
        a["assignment"]["m0"]["b"].remove(1)
        a["assignment"]["m1"]["b"] = [1, 2, 3]

    _named(broken(join, split), "a+b: units [1] split across members")


def test_join_unit_given_to_a_member_reading_fewer_of_its_topics_is_named(join: Answer) -> None:
    def narrow(a: Answer) -> None:
        a["assignment"]["m0"]["a"].remove(0)
        a["assignment"]["m0"]["b"].remove(0)
        a["assignment"]["m3"]["a"] = [0]
        a["unassigned"]["b"] = [0, 4]

    _named(broken(join, narrow), "a unit went to a member reading fewer of its topics")


def test_join_unit_given_to_nobody_is_named(join: Answer) -> None:
    def nobody(a: Answer) -> None:
        a["assignment"]["m0"]["a"].remove(0)
        a["assignment"]["m0"]["b"].remove(0)
        a["unassigned"] = {"a": [0], "b": [0, 4]}

    _named(broken(join, nobody), "a+b: units [0] given to nobody")


def test_unassigned_partition_whose_unit_member_reads_it_is_named(join: Answer) -> None:
    def withheld(a: Answer) -> None:
        a["assignment"]["m0"]["b"].remove(0)
        a["unassigned"]["b"] = [0, 4]

    _named(broken(join, withheld), "unassigned.b: lists partitions whose unit's member reads b")


def test_partition_beyond_the_join_assigned_is_named(join: Answer) -> None:
    def beyond(a: Answer) -> None:
        a["assignment"]["m1"]["b"].append(4)
        a["unassigned"] = {}

    _named(broken(join, beyond), "b: partitions beyond the join's smallest partition count assigned")


def test_unassigned_naming_an_unsubscribed_topic_is_named(join: Answer) -> None:
    _named(broken(join, lambda a: a["unassigned"].update(zzz=[0])), "unassigned.zzz: not a subscribed topic")


def test_unassigned_listing_an_assigned_partition_is_named(join: Answer) -> None:
    _named(broken(join, lambda a: a["unassigned"].update(c=[1])), "unassigned.c: lists partitions that are assigned")


@pytest.mark.parametrize("stat", ["owned", "kept", "moves", "min_load", "max_load"])
def test_wrong_stat_is_named(join: Answer, stat: str) -> None:
    _named(broken(join, lambda a: a["stats"].update({stat: a["stats"][stat] + 1})), f"stats.{stat}: says")


def test_optimal_fallback_is_named(join: Answer) -> None:
    _named(broken(join, lambda a: a["stats"].update(fallback=True)), "a fallback answer cannot be optimal")


def test_eager_answer_that_revokes_is_named(join: Answer) -> None:
    _named(broken(join, lambda a: a["revoke"].update(m0={"c": [0]})), "only the cooperative protocol revokes")
    _named(broken(join, lambda a: a.update(target=a["assignment"])), "only the cooperative protocol revokes")


def test_cooperative_answer_without_target_is_named(cooperative: Answer) -> None:
    _named(broken(cooperative, lambda a: a.update(target=None), COOPERATIVE), "target: missing")


def test_revoke_from_an_unknown_member_is_named(cooperative: Answer) -> None:
    found = broken(cooperative, lambda a: a["revoke"].update(ghost={"t": [0]}), COOPERATIVE)
    _named(found, "revoke.ghost: unknown member")


def test_revoke_of_a_partition_not_owned_is_named(cooperative: Answer) -> None:
    found = broken(cooperative, lambda a: a["revoke"].update(m1={"t": [0]}), COOPERATIVE)
    _named(found, "revoke.m1.t: revokes partitions it does not own")


def test_running_partition_outside_the_target_is_named(cooperative: Answer) -> None:
    found = broken(cooperative, lambda a: a["assignment"]["m1"].update(t=[0]), COOPERATIVE)
    _named(found, "assignment.m1.t: not part of the target")


def test_running_partition_still_being_revoked_is_named(cooperative: Answer) -> None:
    found = broken(cooperative, lambda a: a["assignment"]["m1"].update(t=[3]), COOPERATIVE)
    _named(found, "assignment.m1.t: holds partitions still being revoked")


# unit_violations: the dispatcher's cheap check on units, before they become partitions


@pytest.fixture(scope="module")
def units() -> tuple[Any, list[np.ndarray]]:
    index = index_consumer_problem(ConsumerProblem.model_validate(JOIN))
    owners = [np.full(g.units, min(g.eligible), dtype=np.int64) for g in index.groups]
    assert unit_violations(index, owners) == []
    return index, owners


def test_units_wrong_number_of_groups_is_named(units: tuple[Any, list[np.ndarray]]) -> None:
    index, owners = units
    _named(unit_violations(index, owners[:-1]), "owner arrays for")


def test_units_wrong_number_of_owners_is_named(units: tuple[Any, list[np.ndarray]]) -> None:
    index, owners = units
    short = [o[:-1] if len(o) else o for o in owners]
    _named(unit_violations(index, short), "owners for")


@pytest.mark.parametrize("who", ["nobody", "m3", "past the members", "below -1"])
def test_unit_given_to_nobody_or_a_member_that_cannot_take_it_is_named(
    units: tuple[Any, list[np.ndarray]], who: str
) -> None:
    index, owners = units
    g = next(i for i, group in enumerate(index.groups) if len(group.topics) == 2)
    wrong = [o.copy() for o in owners]
    slots = {"nobody": -1, "past the members": index.member_count + 3, "below -1": -2}
    wrong[g][0] = slots[who] if who in slots else index.members.index(who)
    _named(unit_violations(index, wrong), "given to no member or one that cannot read them")
