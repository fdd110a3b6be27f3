"""`pip wheel .` gives one package at the top level, `stickyd`: installed in a fresh environment
beside a user's own `models` and `client` packages, both import and work, and so does the CLI."""

from __future__ import annotations

import subprocess
import zipfile
from pathlib import Path

import pytest

from tests.packaging import build_wheel, env_with_dependencies_only

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("models", "solvers", "service", "client", "pipeline", "cli")
EXAMPLE = ROOT / "service" / "examples" / "consumer-kip54-unequal.json"

USER_CODE = """
import models, client
from stickyd.client.assignor import StickydAssignor
from stickyd.client.partitioner import UniformStickyPartitioner
from stickyd.models import ConsumerProblem
from stickyd.solvers import solve_consumer

assert models.OWNER == "the user's models" and client.OWNER == "the user's client"
assert StickydAssignor.name == "stickyd" and UniformStickyPartitioner.__name__
problem = ConsumerProblem.model_validate({"topics": {"t": 4}, "members": [{"id": "a", "topics": ["t"]}]})
print(models.OWNER, client.OWNER, solve_consumer(problem).stats.solver)
"""


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel, built by pip from a copy of the tracked tree (no build files left in the checkout)."""
    return build_wheel(tmp_path_factory.mktemp("source"), tmp_path_factory.mktemp("wheel"))


@pytest.fixture(scope="module")
def fresh_env(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A new virtual environment with the wheel installed; its dependencies are this
    environment's, reached through a path file (this checkout's own editable install is not)."""
    env = tmp_path_factory.mktemp("env")
    env_with_dependencies_only(env, wheel)
    return env


@pytest.fixture
def user_project(tmp_path: Path) -> Path:
    """A user's application with packages named like stickyd's folders."""
    for package in ("models", "client"):
        (tmp_path / package).mkdir()
        (tmp_path / package / "__init__.py").write_text(f'OWNER = "the user\'s {package}"\n')
    (tmp_path / "app.py").write_text(USER_CODE)
    return tmp_path


def test_the_wheel_puts_stickyd_alone_at_the_top_level(wheel: Path) -> None:
    tops = {name.split("/")[0] for name in zipfile.ZipFile(wheel).namelist()}
    assert {top for top in tops if not top.endswith(".dist-info")} == {"stickyd"}
    names = set(zipfile.ZipFile(wheel).namelist())
    # every package folder of the tree is in the wheel, under stickyd/
    listed = subprocess.run(["git", "ls-files", "*__init__.py"], cwd=ROOT, capture_output=True, text=True, check=True)
    folders = [name for name in listed.stdout.split() if name.split("/")[0] in PACKAGES]
    assert folders and {f"stickyd/{name}" for name in folders} <= names
    # the contract's examples and the migrations travel with the service
    assert "stickyd/service/examples/consumer-kip54-unequal.json" in names
    assert "stickyd/service/store/migrations/script.py.mako" in names


def test_a_users_models_and_client_import_beside_stickyd(fresh_env: Path, user_project: Path) -> None:
    run = subprocess.run(
        [str(fresh_env / "bin" / "python"), "app.py"], cwd=user_project, capture_output=True, text=True, timeout=120
    )
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stdout.split() == ["the", "user's", "models", "the", "user's", "client", "direct-equal"]


def test_the_installed_cli_solves_and_serves_from_the_users_project(fresh_env: Path, user_project: Path) -> None:
    stickyd = str(fresh_env / "bin" / "stickyd")
    solved = subprocess.run(
        [stickyd, "solve", "consumer", str(EXAMPLE)], cwd=user_project, capture_output=True, text=True, timeout=120
    )
    assert solved.returncode == 0, solved.stderr[-2000:]
    assert '"optimal":true' in solved.stdout.replace(" ", "")
    # the demo starts `stickyd serve`, whose solver processes are `python -m stickyd.service...`
    demo = subprocess.run([stickyd, "demo"], cwd=user_project, capture_output=True, text=True, timeout=300)
    assert demo.returncode == 0, demo.stderr[-2000:]
    assert "stickyd serve is answering" in demo.stdout
