"""Claimed task names resolved in bulk (models/streams/claims.py) give the ids a dictionary of
every task's name gives, name by name; names the bulk path cannot read (non-ASCII, long
subtopology ids, leading zeros, a name without a partition) are left to the dictionary (None),
never resolved differently."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from stickyd.models.streams.claims import resolve_task_names

Request = tuple[list[str], list[int], list[str]]
SUB_IDS = st.sampled_from(["0", "1", "12", "a_b", "x", "topo__3", "1234567", "12345678", "é", "0_0", "_", "9"])


def dictionary_ids(sub_ids: list[str], partitions: list[int], claimed: list[str]) -> list[int]:
    """The plain reading: every task named `<subtopology>_<partition>`, looked up one by one."""
    task = {}
    for s, (sub, count) in enumerate(zip(sub_ids, partitions, strict=True)):
        for p in range(count):
            task[f"{sub}_{p}"] = sum(partitions[:s]) + p
    return [task.get(name, -1) for name in claimed]


def resolved(sub_ids: list[str], partitions: list[int], claimed: list[str]) -> np.ndarray | None:
    counts = np.array(partitions, dtype=np.int64)
    return resolve_task_names(iter(claimed), len(claimed), tuple(sub_ids), np.cumsum(counts) - counts, counts)


@st.composite
def requests(draw: st.DrawFn) -> Request:
    sub_ids = draw(st.lists(SUB_IDS, min_size=1, max_size=4, unique=True))
    partitions = [draw(st.integers(0, 12)) for _ in sub_ids]
    names = st.one_of(
        st.builds(lambda s, p: f"{s}_{p}", st.sampled_from([*sub_ids, "gone", "1_"]), st.integers(0, 15)),
        st.sampled_from(["0_01", "0_", "_0", "0", "a_b_2x", "1_2147483647", "0_4294967296"]),
    )
    return sub_ids, partitions, draw(st.lists(names, max_size=30))


@settings(max_examples=300, deadline=None)
@given(requests())
def test_bulk_ids_equal_the_dictionarys_wherever_the_bulk_path_answers(case: Request) -> None:
    sub_ids, partitions, claimed = case
    ids = resolved(sub_ids, partitions, claimed)
    if ids is not None:
        assert ids.tolist() == dictionary_ids(sub_ids, partitions, claimed)


def test_kafka_shaped_names_are_resolved_in_bulk_stale_ones_as_minus_one() -> None:
    """Numeric and short subtopology ids, as Kafka Streams names them: the bulk path answers
    (so the property above is not vacuous there), unknown subtopologies and partitions past the
    count are -1."""
    sub_ids, partitions = ["0", "1", "10", "a_b"], [3, 0, 2000, 2]
    claimed = ["10_1999", "0_2", "1_0", "10_2000", "a_b_1", "b_1", "0_0", "3_0"]
    ids = resolved(sub_ids, partitions, claimed)
    assert ids is not None
    assert ids.tolist() == dictionary_ids(sub_ids, partitions, claimed) == [2002, 2, -1, -1, 2004, -1, 0, -1]


def test_names_the_bulk_path_cannot_read_are_left_to_the_dictionary() -> None:
    assert resolved(["12345678"], [2], ["12345678_1"]) is None  # a subtopology id past 7 bytes
    assert resolved(["0"], [2], ["é_1"]) is None  # non-ASCII
    assert resolved(["0"], [2], ["0_01"]) is None  # a leading zero: no task is named so
    assert resolved(["0"], [2], ["01"]) is None  # no underscore
