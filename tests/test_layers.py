"""Dependencies point one way: models <- solvers <- service, client, pipeline <- cli.

Each package is imported in a fresh interpreter and the modules it pulled in are listed, so a
lazy import inside a function does not count, only what importing the package itself loads.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

FORBIDDEN = {
    "models": ["ortools", "fastapi", "pyspark", "solvers", "service", "client", "pipeline", "cli"],
    "solvers": ["fastapi", "pyspark", "service", "client", "pipeline", "cli"],
    "service": ["pyspark", "pipeline", "cli", "typer"],
    "client": ["pyspark", "service", "pipeline", "cli"],
    "pipeline": ["service", "cli"],
}


def _loaded_by(package: str) -> set[str]:
    code = f"import json, sys, importlib; importlib.import_module({package!r}); print(json.dumps(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    return {name.split(".")[0] for name in json.loads(out)}


@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_package_imports_nothing_above_it(package: str) -> None:
    """Importing a package (and every module in it) loads none of the layers above it."""
    modules = subprocess.run(
        [
            sys.executable,
            "-c",
            f"import pkgutil, {package}; print(' '.join(m.name for m in pkgutil.iter_modules({package}.__path__)))",
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    loaded: set[str] = set()
    for module in [package, *(f"{package}.{m}" for m in modules if m != "__main__")]:
        loaded |= _loaded_by(module)
    assert not loaded & set(FORBIDDEN[package]), f"{package} loads {sorted(loaded & set(FORBIDDEN[package]))}"
