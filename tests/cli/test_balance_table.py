"""`stickyd solve consumer --table` on a balance `load` answer shows the normalized loads and bounds."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from tests.conftest import load_example


def test_table_of_a_load_answer_shows_normalized_loads_and_what_is_proven() -> None:
    """The strict hot-partition example: loads 400..450, L* >= 450, at least one move."""
    wide = {**os.environ, "COLUMNS": "200"}
    command = [sys.executable, "-m", "stickyd.cli", "solve", "consumer", "-", "--table"]
    problem = json.dumps(load_example("consumer-load-strict.json"))
    result = subprocess.run(command, input=problem, capture_output=True, text=True, timeout=120, env=wide)
    assert result.returncode == 0, result.stderr
    assert "normalized load (weight / capacity) 400..450 · best possible >= 450 · moves >= 1" in result.stdout
