"""The house stays easy to walk: no folder holds more than 15 modules side by side, and no function
runs over 80 lines (a longer one is split into named steps)."""

from __future__ import annotations

import ast
import subprocess
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MAX_MODULES_PER_FOLDER = 15
MAX_FUNCTION_LINES = 80


def _python_files() -> list[Path]:
    listed = subprocess.run(["git", "ls-files", "*.py"], cwd=ROOT, capture_output=True, text=True, check=True)
    return [ROOT / name for name in listed.stdout.split()]


def test_no_folder_holds_more_than_15_modules() -> None:
    """Modules side by side in one folder (`__init__.py` aside): a reader finds a module by its
    folder (`solvers/consumer/`), not among dozens of neighbours."""
    per_folder = Counter(path.parent.relative_to(ROOT) for path in _python_files() if path.name != "__init__.py")
    crowded = {str(folder): count for folder, count in per_folder.items() if count > MAX_MODULES_PER_FOLDER}
    assert not crowded, f"folders with more than {MAX_MODULES_PER_FOLDER} modules: {crowded}"


def test_no_function_runs_over_80_lines() -> None:
    """Every function and method of the product, its benchmarks and its tests, from `def` to its last line."""
    long = []
    for path in _python_files():
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                lines = (node.end_lineno or node.lineno) - node.lineno + 1
                if lines > MAX_FUNCTION_LINES:
                    long.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.name} ({lines} lines)")
    assert not long, "functions over 80 lines:\n" + "\n".join(long)
