"""The classic-protocol mapping shared by the kafka-python and aiokafka assignors, the outage
record, and the aiokafka assignor on its own (no broker: an unreachable service, so the leader
solves in-process)."""

from __future__ import annotations

import logging

import pytest
from aiokafka.coordinator.protocol import ConsumerProtocolMemberAssignment, ConsumerProtocolMemberMetadata

from stickyd.cli.child_service import free_port
from stickyd.client import fallback
from stickyd.client.aiokafka_assignor import StickydAssignor
from stickyd.client.consumer_mapping import consumer_problem, encode_user_data, member_entry


def test_member_entry_reads_owned_generation_and_rack_from_user_data_else_the_owned_partitions() -> None:
    reported = member_entry("a", ["t", "s"], encode_user_data({"t": [0, 2]}, 7, "r1"), {"t": [5]})
    assert reported == {"id": "a", "topics": ["s", "t"], "owned": {"t": [0, 2]}, "generation": 7, "rack": "r1"}
    unreadable = member_entry("b", ["t"], b"\xff not json", {"t": [5]})
    assert unreadable == {"id": "b", "topics": ["t"], "owned": {"t": [5]}}


def test_consumer_problem_counts_only_topics_the_metadata_knows() -> None:
    members = [member_entry("a", ["t", "unknown"], None)]
    problem = consumer_problem(members, {"t": 3}.get, {"strategy": "optimal"})
    assert problem["topics"] == {"t": 3}
    assert problem["members"] == members


def test_an_outage_is_logged_once_counted_and_its_end_logged(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    results = iter([ConnectionError("down"), ConnectionError("down"), None])

    def answer(url: str, problem: object, timeout_s: float, limit: int | None) -> tuple[str, Exception | None]:
        return "solution", next(results)

    monkeypatch.setattr(fallback, "assign_consumer_or_solve", answer)
    outage = fallback.Outage(logging.getLogger("test.outage"))
    with caplog.at_level(logging.INFO, logger="test.outage"):
        for _ in range(3):
            assert outage.ask("http://stickyd", {}, 1.0) == "solution"
    assert outage.fallbacks == 2 and not outage.down
    assert [r.levelname for r in caplog.records] == ["WARNING", "INFO"]


class Cluster:
    def partitions_for_topic(self, topic: str) -> set[int] | None:
        return {0, 1, 2} if topic == "t" else None


def test_aiokafka_assignor_assigns_every_member_in_process_when_stickyd_is_down_and_reports_what_it_owns() -> None:
    assignor = StickydAssignor(url=f"http://127.0.0.1:{free_port()}", timeout_ms=300)
    members = {
        "m1": assignor.metadata({"t"}),
        "m2": ConsumerProtocolMemberMetadata(0, ["t"], b""),
        "m3": ConsumerProtocolMemberMetadata(0, ["other"], b""),
    }
    assignments = assignor.assign(Cluster(), members)  # type: ignore[arg-type]
    assert set(assignments) == {"m1", "m2", "m3"}
    assert sorted(p for a in assignments.values() for tp in a.partitions() for p in [tp.partition]) == [0, 1, 2]
    assert assignments["m3"].assignment == []
    assert assignor.fallbacks == 1

    assignor.on_assignment(ConsumerProtocolMemberAssignment(0, [("t", [2, 0])], b""))
    assert member_entry("m1", ["t"], assignor.metadata({"t"}).user_data)["owned"] == {"t": [0, 2]}
