"""The tree is ruff-clean (lint and format) and the package `stickyd` mypy-clean: `scripts/lint`."""

import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_ruff_and_mypy_are_clean() -> None:
    run = subprocess.run([str(ROOT / "scripts" / "lint")], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, (run.stdout + run.stderr)[-4000:]
