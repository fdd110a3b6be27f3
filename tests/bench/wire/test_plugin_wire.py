"""`bench.wire.plugin_wire` on a small group against a real `stickyd serve`: one row per instance
with UniformAssignor, the plug-in in each encoding (and with every member's map new, and solving a
group of equal subscriptions in the broker) and the service alone, and no fallback."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import pytest

from bench.layouts import kafka_like_problem
from bench.wire.plugin_wire import FLOOR, _instances, one_row
from stickyd.cli.child_service import ServiceProcess
from tests.kafka.jvm import kafka_jars_built


@pytest.mark.skipif(not kafka_jars_built(), reason="Kafka jars not built (mvn package)")
def test_a_row_compares_the_plugin_in_both_encodings_with_uniform(service: ServiceProcess, tmp_path: Path) -> None:
    problem = kafka_like_problem(2_000, 50, layout="range", shape="equal", event="join")
    problem["options"] = {"time_limit_ms": 2_000}
    args = argparse.Namespace(url=service.url, service_pid=service.pid, timeout_ms=4_000, rounds=1, cap_s=120.0)
    row = one_row(("2,000 x 50", "equal", "range", "join"), problem, tmp_path, args)
    cells = [cell.strip() for cell in row.strip("|").split("|")]
    assert cells[:4] == ["2,000 x 50", "equal", "range", "join"]
    uniform_s, plugin_s, in_broker_s, new_maps_s, plugin_json_s = (float(cells[i]) for i in (4, 5, 7, 11, 12))
    assert uniform_s >= 0 and plugin_s > 0 and in_broker_s > 0 and new_maps_s > 0 and plugin_json_s > 0
    assert cells[6].endswith("x") or cells[6] == "-"  # "-" when Uniform rounds to 0
    assert cells[8].endswith("x") or cells[8] == "-"
    # CPU: Uniform's, then the plug-in's as its JVM's plus the service's, which add up
    uniform_cpu, plugin_cpu, jvm_cpu, service_cpu = (float(v) for v in re.findall(r"[\d.]+", cells[9]))
    assert uniform_cpu >= 0 and jvm_cpu > 0 and service_cpu >= 0
    assert plugin_cpu == pytest.approx(jvm_cpu + service_cpu, abs=0.0015)
    assert cells[10].endswith("x") or cells[10] == "-"
    moves_uniform, moves_plugin = (int(v.replace(",", "")) for v in cells[16].split(" / "))
    assert moves_plugin <= moves_uniform
    assert cells[17] == "40/40 / 40/40"  # 2,000 partitions over 50 members
    # no fallback, nothing capped, and the broker's answer moved and loaded as the service's
    assert cells[18] == ""


def test_each_section_starts_with_the_floor_and_chosen_sizes_leave_it_out() -> None:
    args = argparse.Namespace(sizes="", quick=True, events="leave,join", time_limit_ms=1_000)
    labels = [label for label, _ in _instances(args, ["sticky", "stickyd"])]
    floor = f"{FLOOR[0]:,} x {FLOOR[1]:,}"
    # the floor of each section: the smallest group, equal subscriptions, one member leaves
    assert labels[:2] == [(floor, "equal", "sticky", "leave"), (floor, "equal", "stickyd", "leave")]
    assert all(label[0] == "10,000 x 1,000" for label in labels[2:]) and len(labels) == 2 + 2 * 2 * 2
    _, problem = next(_instances(args, ["sticky"]))
    assert sum(problem["topics"].values()) == FLOOR[0] and len(problem["members"]) == FLOOR[1]
    chosen = argparse.Namespace(sizes="200x10", quick=False, events="leave", time_limit_ms=1_000)
    assert [label for label, _ in _instances(chosen, ["sticky"])] == [
        ("200 x 10", shape, "sticky", "leave") for shape in ("equal", "unequal")
    ]


@pytest.mark.skipif(not kafka_jars_built(), reason="Kafka jars not built (mvn package)")
def test_a_row_of_unequal_subscriptions_times_the_even_split_in_the_broker(
    service: ServiceProcess, tmp_path: Path
) -> None:
    problem = kafka_like_problem(2_000, 50, layout="range", shape="unequal", event="join")
    problem["options"] = {"time_limit_ms": 2_000}
    args = argparse.Namespace(url=service.url, service_pid=service.pid, timeout_ms=4_000, rounds=1, cap_s=120.0)
    row = one_row(("2,000 x 50", "unequal", "range", "join"), problem, tmp_path, args)
    cells = [cell.strip() for cell in row.strip("|").split("|")]
    assert float(cells[7]) > 0 and (cells[8].endswith("x") or cells[8] == "-")
    # solved in the broker, moving and loading as the service's answer: no note
    assert cells[18] == ""
