"""The CLI as a new user meets it: `--help` with defaults and plain words, CLI words for bad input,
and the README's "Use" commands working from the repository root as written."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
STICKYD = [sys.executable, "-m", "stickyd.cli"]
WIDE = {**os.environ, "COLUMNS": "200"}


def _help(*command: str) -> str:
    result = subprocess.run([*STICKYD, *command, "--help"], capture_output=True, text=True, timeout=60, env=WIDE)
    assert result.returncode == 0, result.stderr
    return result.stdout


@pytest.mark.parametrize(
    "command",
    [
        ("serve",),
        ("solve", "consumer"),
        ("snapshot",),
        ("pipeline", "plan"),
        ("pipeline", "replay"),
        ("groups", "show"),
    ],  # fmt: skip
)
def test_help_has_no_type_markers_or_braces(command: tuple[str, ...]) -> None:
    """No `<bool>`, `<str>` or `{file}`: options read as Click writes them (TEXT, INTEGER, FILE)."""
    text = _help(*command)
    assert not re.search(r"<(bool|str|int|path|float)[^>]*>|\{[a-z_]+\}", text), text
    assert "Usage: stickyd " in text


def test_serve_help_shows_each_default_and_its_environment_variable() -> None:
    text = " ".join(_help("serve").split())
    for name, default in (("STICKYD_HOST", "127.0.0.1"), ("STICKYD_PORT", "8000"), ("STICKYD_WORKERS", "cores")):
        assert f"[env var: {name}]" in text and default in text, name


def test_pipeline_plan_help_shows_the_spark_log_options_with_defaults() -> None:
    text = " ".join(_help("pipeline", "plan").split())
    assert "--spark-log-level" in text and "[default: ERROR]" in text
    assert "--spark-log" in text and "OUT/spark.log" in text


def test_garbage_on_stdin_is_named_in_cli_words() -> None:
    result = subprocess.run([*STICKYD, "solve", "consumer", "-"], input="garbage", capture_output=True, text=True,
                            timeout=60)  # fmt: skip
    assert result.returncode == 2
    assert result.stderr.strip() == "stickyd: standard input: not valid JSON (Expecting value at line 1 column 1)"


def _readme_solve_commands() -> list[str]:
    readme = (ROOT / "README.md").read_text()
    use = readme[readme.index("## Use") : readme.index("### A live cluster")]
    lines = [line.split("#")[0].strip() for line in use.splitlines()]
    return [line for line in lines if line.startswith(".venv/bin/stickyd solve")]


def test_the_readme_solve_commands_work_from_the_repository_root() -> None:
    """Each `.venv/bin/stickyd solve ...` line of "Use", run as written from the root (the venv's
    `stickyd` is this interpreter's `-m stickyd.cli`), answers with exit 0 and output."""
    commands = _readme_solve_commands()
    assert len(commands) >= 3
    for command in commands:
        words = shlex.split(command)
        stdin = None
        if "<" in words:
            at = words.index("<")
            stdin = (ROOT / words[at + 1]).read_text()
            words = words[:at]
        assert words[0] == ".venv/bin/stickyd"
        result = subprocess.run([*STICKYD, *words[1:]], input=stdin, capture_output=True, text=True, timeout=120,
                                cwd=ROOT, env=WIDE)  # fmt: skip
        assert result.returncode == 0 and result.stdout.strip(), (command, result.stderr)
