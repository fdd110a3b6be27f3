"""Fleets for the pipeline tests (the shared local SparkSession, `spark`, is in tests/conftest.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from stickyd.pipeline.generate import FleetShape, fleet_rows
from tests.conftest import CONTRACT

SMALL_FLEET = FleetShape(groups=40, max_members=40, max_topics=12, max_clients=12, max_subtopologies=5)

BAD_ROWS = (
    # (raw line, expected error_field)
    ('{"group_id": "dup", "kind": "consumer", "problem": {"topics": {"a": 2}, '
     '"members": [{"id": "x", "topics": ["a"]}, {"id": "x", "topics": ["a"]}]}}', "problem.members[1].id"),
    ("this is not json", "row"),
    ('{"kind": "consumer", "problem": {"topics": {}, "members": [{"id": "x", "topics": []}]}}', "group_id"),
    ('{"group_id": "what", "kind": "batch", "problem": {}}', "kind"),
    ('{"group_id": "neg", "kind": "streams", "problem": {"subtopologies": [{"id": "s", "partitions": -1}], '
     '"clients": [{"id": "c"}]}}', "problem.subtopologies[0].partitions"),
)  # fmt: skip


def contract_rows() -> list[dict[str, Any]]:
    """The contract's examples as fleet rows (joins, generations, cooperative, Streams)."""
    rows = []
    for path in sorted(CONTRACT.glob("*.json")):
        kind = "streams" if path.name.startswith("streams") else "consumer"
        rows.append({"group_id": path.stem, "kind": kind, "problem": json.loads(path.read_text())})
    return rows


@pytest.fixture(scope="session")
def fleet_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """40 generated groups, the contract's examples, and malformed rows at known line numbers."""
    path = tmp_path_factory.mktemp("fleet") / "fleet.jsonl"
    lines = [json.dumps(row) for row in [*fleet_rows(11, SMALL_FLEET), *contract_rows()]]
    lines[5:5] = [raw for raw, _ in BAD_ROWS]
    path.write_text("\n".join(lines) + "\n")
    return path
