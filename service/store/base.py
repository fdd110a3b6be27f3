"""The one declarative base every stored table is mapped on (groups here, tokens beside it)."""

from __future__ import annotations

from sqlalchemy import MetaData
from sqlalchemy.orm import DeclarativeBase

NAMING = {
    "ix": "ix_%(table_name)s_%(column_0_N_name)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}
"""Constraint names Alembic can refer to on SQLite and PostgreSQL alike."""

DEFAULT_TENANT = "default"
"""The tenant every group belongs to when authentication is off."""


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING)
