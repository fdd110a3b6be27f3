"""`bench.wire.plugin_wire` on a small group against a real `stickyd serve`: one row per instance
with UniformAssignor, the plug-in in each encoding (and with every member's map new) and the
service alone, and no fallback."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from bench.layouts import kafka_like_problem
from bench.wire.plugin_wire import one_row
from stickyd.cli.child_service import ServiceProcess
from tests.kafka.jvm import kafka_jars_built


@pytest.mark.skipif(not kafka_jars_built(), reason="Kafka jars not built (mvn package)")
def test_a_row_compares_the_plugin_in_both_encodings_with_uniform(service: ServiceProcess, tmp_path: Path) -> None:
    problem = kafka_like_problem(2_000, 50, layout="range", shape="equal", event="join")
    problem["options"] = {"time_limit_ms": 2_000}
    args = argparse.Namespace(url=service.url, timeout_ms=4_000, rounds=1, cap_s=120.0)
    row = one_row(("2,000 x 50", "equal", "range", "join"), problem, tmp_path, args)
    cells = [cell.strip() for cell in row.strip("|").split("|")]
    assert cells[:4] == ["2,000 x 50", "equal", "range", "join"]
    uniform_s, plugin_s, new_maps_s, plugin_json_s = (float(cells[i]) for i in (4, 5, 7, 8))
    assert uniform_s >= 0 and plugin_s > 0 and new_maps_s > 0 and plugin_json_s > 0
    assert cells[6].endswith("x") or cells[6] == "-"  # "-" when Uniform rounds to 0
    moves_uniform, moves_plugin = (int(v.replace(",", "")) for v in cells[12].split(" / "))
    assert moves_plugin <= moves_uniform
    assert cells[13] == "40/40 / 40/40"  # 2,000 partitions over 50 members
    assert cells[14] == ""  # no fallback, nothing capped
