"""The store tests run once on SQLite and once on PostgreSQL (a private server)."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from pathlib import Path

import pytest

from stickyd.service.store import Database, open_database
from tests.store.postgres_cluster import PostgresCluster

_names = itertools.count()


def fresh_database_url(backend: str, postgres: PostgresCluster | None, tmp: Path) -> str | None:
    """A fresh database: None (SQLite in `tmp`) or a new PostgreSQL database's URL."""
    if backend == "sqlite":
        return None
    assert postgres is not None
    return postgres.create_database(f"stickyd_test_{next(_names)}")


@pytest.fixture(params=["sqlite", "postgresql"])
def database(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Database]:
    """A migrated, empty group store on each backend."""
    postgres = request.getfixturevalue("postgres") if request.param == "postgresql" else None
    db = open_database(tmp_path, fresh_database_url(request.param, postgres, tmp_path))
    yield db
    db.close()
