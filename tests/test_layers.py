"""Dependencies point one way: models <- solvers <- service, client, pipeline <- cli, all under the
one import name `stickyd`.

Each package is imported in a fresh interpreter and the modules it pulled in are listed, so a
lazy import inside a function does not count, only what importing the package itself loads.
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
    code = f"import json, sys, importlib; importlib.import_module({package!r}); print(json.dumps(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    return {_layer(name) for name in json.loads(out)}


@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_package_imports_nothing_above_it(package: str) -> None:
    """Importing a package (and every module in it) loads none of the layers above it."""
    modules = subprocess.run(
        [
            sys.executable,
            "-c",
            f"import pkgutil, {package}; "
            f"print(' '.join(m.name for m in pkgutil.walk_packages({package}.__path__, {package!r} + '.')))",
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    loaded: set[str] = set()
    for module in [package, *(m for m in modules if not m.endswith("__main__") and ".migrations" not in m)]:
        loaded |= _loaded_by(module)
    assert not loaded & set(FORBIDDEN[package]), f"{package} loads {sorted(loaded & set(FORBIDDEN[package]))}"
