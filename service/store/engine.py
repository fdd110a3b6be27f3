"""The database behind the service: SQLite under STICKYD_DATA_DIR by default, PostgreSQL (psycopg 3)
through STICKYD_DATABASE_URL; the schema brought up to date with Alembic at start.

Writes that must be serialised begin with `Database.writing()`: on SQLite that is
`BEGIN IMMEDIATE` (the write lock first, so a later write in the transaction never fails on a
stale read snapshot); PostgreSQL relies on row locks and compare-and-set in the statements.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from alembic import command
from alembic.config import Config
from sqlalchemy import Engine, create_engine, event, text
from sqlalchemy.engine import make_url
from sqlalchemy.orm import Session, sessionmaker

log = logging.getLogger(__name__)

MIGRATIONS = Path(__file__).parent / "migrations"
SQLITE_FILE = "stickyd.db"
SQLITE_BUSY_TIMEOUT_MS = 30_000
MIGRATION_LOCK_KEY = 0x571C_4D
"""PostgreSQL advisory lock held while migrating, so serve processes starting together take turns."""


def database_url(data_dir: str | Path, url: str | None) -> str:
    """`url` when set (a `postgresql://` URL uses psycopg 3), else a SQLite file in `data_dir`."""
    if url:
        parsed = make_url(url)
        if parsed.drivername in ("postgresql", "postgres"):
            parsed = parsed.set(drivername="postgresql+psycopg")
        return parsed.render_as_string(hide_password=False)
    folder = Path(data_dir).expanduser().resolve()
    folder.mkdir(parents=True, exist_ok=True)
    return f"sqlite:///{folder / SQLITE_FILE}"


def make_engine(url: str) -> Engine:
    if make_url(url).get_backend_name() == "sqlite":
        engine = create_engine(url, connect_args={"timeout": SQLITE_BUSY_TIMEOUT_MS / 1000})
        _sqlite_transactions(engine)
        return engine
    return create_engine(url, pool_pre_ping=True, pool_size=5, max_overflow=10)


def _sqlite_transactions(engine: Engine) -> None:
    """Let SQLAlchemy, not the sqlite3 module, say when a transaction begins (and how)."""

    @event.listens_for(engine, "connect")
    def _connect(dbapi_connection: Any, _: Any) -> None:
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS}")
        cursor.execute("PRAGMA synchronous=FULL")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _begin(connection: Any) -> None:
        mode = connection.get_execution_options().get("sqlite_begin", "DEFERRED")
        connection.exec_driver_sql(f"BEGIN {mode}")


class Database:
    """An engine, a session factory for reads and one for serialised writes."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.engine = make_engine(url)
        self.is_sqlite = self.engine.dialect.name == "sqlite"
        self.sessions = sessionmaker(self.engine, expire_on_commit=False)
        writer = self.engine.execution_options(sqlite_begin="IMMEDIATE") if self.is_sqlite else self.engine
        self._writes = sessionmaker(writer, expire_on_commit=False)

    @contextlib.contextmanager
    def reading(self) -> Iterator[Session]:
        with self.sessions() as session:
            yield session

    @contextlib.contextmanager
    def writing(self) -> Iterator[Session]:
        """One transaction: committed when the block ends, rolled back if it raises."""
        with self._writes() as session, session.begin():
            yield session

    def upgrade(self) -> None:
        """Bring the schema to the newest Alembic revision (safe with several processes starting)."""
        with self._migration_lock(), self.engine.connect() as connection:
            config = Config()
            config.set_main_option("script_location", str(MIGRATIONS))
            config.attributes["connection"] = connection
            command.upgrade(config, "head")
            connection.commit()

    @contextlib.contextmanager
    def _migration_lock(self) -> Iterator[None]:
        if self.is_sqlite:
            path = Path(make_url(self.url).database or SQLITE_FILE).with_suffix(".migrate.lock")
            with path.open("a") as lock:
                fcntl.flock(lock, fcntl.LOCK_EX)
                try:
                    yield
                finally:
                    fcntl.flock(lock, fcntl.LOCK_UN)
            return
        with self.engine.connect() as connection:
            connection.execute(text("SELECT pg_advisory_lock(:key)"), {"key": MIGRATION_LOCK_KEY})
            connection.commit()
            try:
                yield
            finally:
                connection.execute(text("SELECT pg_advisory_unlock(:key)"), {"key": MIGRATION_LOCK_KEY})
                connection.commit()

    def close(self) -> None:
        self.engine.dispose()


def open_database(data_dir: str | Path, url: str | None) -> Database:
    """The service's database, migrated to the newest schema."""
    database = Database(database_url(data_dir, url))
    database.upgrade()
    log.info("group state in %s", database.engine.url.render_as_string(hide_password=True))
    return database
