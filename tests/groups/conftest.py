"""Group tests run against a real `stickyd serve` on each store: SQLite (a data directory) and
PostgreSQL (a database in the session's private server). One service per store for the whole
session (starting one costs seconds); tests use their own group ids."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from stickyd.cli.child_service import ServiceProcess, running_service

_names = itertools.count()


@dataclass(frozen=True)
class Backend:
    name: str
    env: dict[str, str]
    """STICKYD_DATA_DIR, and STICKYD_DATABASE_URL for PostgreSQL."""


def make_backend(name: str, request: pytest.FixtureRequest, data_dir: Path) -> Backend:
    """A fresh, empty store of the kind `name`."""
    env = {"STICKYD_DATA_DIR": str(data_dir), "STICKYD_WORKERS": "1"}
    if name == "postgresql":
        postgres = request.getfixturevalue("postgres")
        env["STICKYD_DATABASE_URL"] = postgres.create_database(f"stickyd_groups_{next(_names)}")
    return Backend(name, env)


class Services:
    """Session-wide `stickyd serve` processes, one per store, started when first asked for."""

    def __init__(self, request: pytest.FixtureRequest, tmp: pytest.TempPathFactory, stack: ExitStack) -> None:
        self._request, self._tmp, self._stack = request, tmp, stack
        self._running: dict[str, tuple[Backend, ServiceProcess]] = {}

    def get(self, name: str) -> tuple[Backend, ServiceProcess]:
        if name not in self._running:
            backend = make_backend(name, self._request, self._tmp.mktemp(f"stickyd-{name}"))
            self._running[name] = (backend, self._stack.enter_context(running_service(backend.env)))
        return self._running[name]


@pytest.fixture(scope="session")
def group_services(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Services]:
    with ExitStack() as stack:
        yield Services(request, tmp_path_factory, stack)


@pytest.fixture(scope="session", params=["sqlite", "postgresql"])
def backend_service(request: pytest.FixtureRequest, group_services: Services) -> tuple[Backend, ServiceProcess]:
    return group_services.get(request.param)


@pytest.fixture
def http(backend_service: tuple[Backend, ServiceProcess]) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=backend_service[1].url, timeout=30) as client:
        yield client


def rebalance(http: httpx.Client, group: str, generation: Any, problem: Any, **extra: Any) -> httpx.Response:
    kind = extra.pop("kind", "streams" if isinstance(problem, dict) and "clients" in problem else "consumer")
    body = {"kind": kind, "generation": generation, "problem": problem, **extra}
    return http.post(f"/v1/groups/{group}/rebalance", json=body)


def ok(response: httpx.Response) -> dict[str, Any]:
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body
