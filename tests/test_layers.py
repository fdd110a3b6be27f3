"""Dependencies point one way: models <- solvers <- service, client, pipeline <- cli, all under the
one import name `stickyd`.

Each package and every module in it are imported in a fresh interpreter and the modules they
pulled in are listed, so a lazy import inside a function does not count, only what importing the
modules themselves loads.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

FORBIDDEN = {
    "stickyd.models": [
        "ortools",
        "fastapi",
        "pyspark",
        "stickyd.solvers",
        "stickyd.service",
        "stickyd.client",
        "stickyd.pipeline",
        "stickyd.cli",
    ],
    "stickyd.solvers": ["fastapi", "pyspark", "stickyd.service", "stickyd.client", "stickyd.pipeline", "stickyd.cli"],
    "stickyd.service": ["pyspark", "stickyd.pipeline", "stickyd.cli", "typer"],
    "stickyd.client": ["pyspark", "stickyd.service", "stickyd.pipeline", "stickyd.cli"],
    "stickyd.pipeline": ["stickyd.service", "stickyd.cli"],
}


def _layer(module: str) -> str:
    """`stickyd.service.http.app` belongs to the layer `stickyd.service`; `fastapi.routing` to `fastapi`."""
    parts = module.split(".")
    return ".".join(parts[:2]) if parts[0] == "stickyd" else parts[0]


def _loaded_by(package: str) -> set[str]:
    """The layers loaded by importing `package` and every module in it, in one fresh interpreter:
    the union of what each module loads alone (an import loads the same modules whatever was
    imported before it)."""
    code = (
        "import importlib, json, pkgutil, sys\n"
        f"package = importlib.import_module({package!r})\n"
        f"for info in pkgutil.walk_packages(package.__path__, {package!r} + '.'):\n"
        "    if not info.name.endswith('__main__') and '.migrations' not in info.name:\n"
        "        importlib.import_module(info.name)\n"
        "print(json.dumps(sorted(sys.modules)))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    return {_layer(name) for name in json.loads(out)}


@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_package_imports_nothing_above_it(package: str) -> None:
    """Importing a package (and every module in it) loads none of the layers above it."""
    loaded = _loaded_by(package)
    assert not loaded & set(FORBIDDEN[package]), f"{package} loads {sorted(loaded & set(FORBIDDEN[package]))}"
