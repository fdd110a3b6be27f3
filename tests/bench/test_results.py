"""bench/results.py: every section carries the date, the machine and the command under its
heading, and a command that runs again replaces its own section and no other."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from bench import results


def test_a_section_starts_with_the_date_machine_and_command_and_is_replaced_on_a_rerun(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(results, "RESULTS", tmp_path / "RESULTS.md")
    results.write_section("First", "| a |\n|---|\n| 1 |")
    results.write_section("Second", "kept")
    results.write_section("First", "| a |\n|---|\n| 2 |")
    text = (tmp_path / "RESULTS.md").read_text()
    assert text.startswith(results.HEADER)
    assert text.count("## First") == 1 and "| 1 |" not in text and "| 2 |" in text
    assert text.index("## First") < text.index("## Second") and "kept" in text
    first = text.split("## First\n\n", 1)[1].splitlines()[0]
    assert re.fullmatch(r"Run \d{4}-\d\d-\d\d on .+, \d+ cores, .+; .+, Python [\d.]+, .+\. Written by `.+`\.", first)
