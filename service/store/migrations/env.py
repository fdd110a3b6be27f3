"""Alembic environment: migrations run on the connection stickyd.service.store.engine hands over."""

from __future__ import annotations

from alembic import context

import stickyd.service.store.tables  # noqa: F401 - registers the group tables on Base.metadata
import stickyd.service.store.tokens  # noqa: F401 - registers the tokens table on Base.metadata
from stickyd.service.store.base import Base

connection = context.config.attributes["connection"]
context.configure(connection=connection, target_metadata=Base.metadata, render_as_batch=True)
with context.begin_transaction():
    context.run_migrations()
