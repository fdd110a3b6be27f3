"""Mutation check of the validators: every rule switched off in turn must make a test fail.

A *rule* is a place where a validator reports a violation: `out.append("...")` of a message,
`return ["..."]`, or one entry of a `truth` table of stats compared with what the answer says.
For each, a copy of the repository gets that one report removed (`pass`, `return []`, the
entry deleted), and the validator tests (`tests/models/test_consumer_validator.py`,
`tests/models/test_balance_validator.py`, `tests/models/test_streams_validator.py`) run against
the copy in a fresh interpreter. A mutant the tests still pass is a *survivor*: a rule no test
shows a wrong answer for.

    python -m tests.validator_mutants            # all rules of the validators
    python -m tests.validator_mutants --list     # the mutants only

Not part of the suite (about a minute per dozen mutants); its result is quoted in the README.
"""

from __future__ import annotations

import argparse
import ast
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
VALIDATORS = (
    "models/consumer/validation.py",
    "models/consumer/balance_validation.py",
    "models/streams/validation.py",
)
TESTS = (
    "tests/models/test_consumer_validator.py",
    "tests/models/test_balance_validator.py",
    "tests/models/test_streams_validator.py",
)
PACKAGES = ("models", "solvers", "service", "client", "pipeline", "cli")
COPIED = (*PACKAGES, "bench", "tests", "pyproject.toml")


@dataclass(frozen=True)
class Mutant:
    path: str
    line: int
    end_line: int
    replacement: str
    rule: str


def _is_message(node: ast.expr) -> bool:
    return isinstance(node, ast.JoinedStr) or (isinstance(node, ast.Constant) and isinstance(node.value, str))


def _truth_table(node: ast.AST) -> ast.Dict | None:
    """The dict literal of `truth = {...}` (annotated or not), else None."""
    if isinstance(node, ast.Assign):
        targets = node.targets
    elif isinstance(node, ast.AnnAssign):
        targets = [node.target]
    else:
        return None
    named = any(isinstance(t, ast.Name) and t.id == "truth" for t in targets)
    return node.value if named and isinstance(node.value, ast.Dict) else None


def mutants_of(path: str) -> list[Mutant]:
    """Every report of a violation in the validator at `path`, with what removes it."""
    source = (ROOT / path).read_text()
    lines = source.splitlines()
    found: list[Mutant] = []
    for node in ast.walk(ast.parse(source)):
        call = node.value if isinstance(node, ast.Expr) else None
        reports = (
            isinstance(call, ast.Call)
            and isinstance(call.func, ast.Attribute)
            and call.func.attr == "append"
            and len(call.args) == 1
            and _is_message(call.args[0])
        )
        returns = (
            isinstance(node, ast.Return)
            and isinstance(node.value, ast.List)
            and len(node.value.elts) == 1
            and _is_message(node.value.elts[0])
        )
        table = _truth_table(node)
        for key, value in zip(table.keys, table.values, strict=True) if table else ():
            if key is not None and key.lineno == value.end_lineno:
                # the stat is no longer compared with the answer
                rule = lines[key.lineno - 1].strip()
                found.append(Mutant(path, key.lineno, key.lineno, "", f"truth entry {rule}"))
        if reports or returns:
            assert isinstance(node, ast.stmt) and node.end_lineno is not None
            indent = lines[node.lineno - 1][: node.col_offset]
            replacement = indent + ("pass" if reports else "return []")
            rule = " ".join(line.strip() for line in lines[node.lineno - 1 : node.end_lineno])
            found.append(Mutant(path, node.lineno, node.end_lineno, replacement, rule))
    return sorted(found, key=lambda m: m.line)


def killed(mutant: Mutant, work: Path) -> bool:
    """Whether the validator tests fail with `mutant` applied to the copy in `work`."""
    original = (ROOT / mutant.path).read_text().splitlines()
    mutated = original[: mutant.line - 1] + [mutant.replacement] + original[mutant.end_line :]
    target = work / mutant.path
    target.write_text("\n".join(mutated) + "\n")
    try:
        run = subprocess.run(
            [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", *TESTS],
            cwd=work,
            capture_output=True,
            text=True,
        )
    finally:
        target.write_text("\n".join(original) + "\n")
    return run.returncode != 0


def _link_as_installed(work: Path) -> None:
    """`stickyd` in the copy, its packages linked to the copy's folders as pyproject.toml maps them:
    the tests, run from the copy, import the mutated code before this checkout's editable install."""
    (work / "stickyd").mkdir()
    shutil.copy(ROOT / "stickyd" / "__init__.py", work / "stickyd" / "__init__.py")
    for package in PACKAGES:
        (work / "stickyd" / package).symlink_to(work / package, target_is_directory=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--list", action="store_true", help="list the mutants, run nothing")
    args = parser.parse_args()
    mutants = [m for path in VALIDATORS for m in mutants_of(path)]
    if args.list:
        for m in mutants:
            print(f"{m.path}:{m.line}: {m.rule}")
        return
    with tempfile.TemporaryDirectory(prefix="stickyd-mutants-") as tmp:
        work = Path(tmp)
        for name in COPIED:
            source = ROOT / name
            if source.is_dir():
                shutil.copytree(source, work / name, ignore=shutil.ignore_patterns("__pycache__"))
            else:
                shutil.copy(source, work / name)
        _link_as_installed(work)
        baseline = subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *TESTS], cwd=work, capture_output=True
        )
        if baseline.returncode != 0:
            raise SystemExit("the validator tests fail without any mutant: nothing to measure")
        survivors = []
        for m in mutants:
            dead = killed(m, work)
            print(f"{'killed  ' if dead else 'SURVIVED'} {m.path}:{m.line}: {m.rule}", flush=True)
            if not dead:
                survivors.append(m)
    print(f"{len(mutants) - len(survivors)} of {len(mutants)} mutants killed, {len(survivors)} survived")
    if survivors:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
