"""The group state tables: one row per group, one per retained generation.

Every row is keyed by `tenant` first, so one tenant's groups are invisible to another.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import JSON, BigInteger, Boolean, Float, Index, Integer, String
from sqlalchemy.orm import Mapped, mapped_column

from stickyd.service.store.base import Base

GROUP_ID_LENGTH = 255
TENANT_LENGTH = 255


class GroupRow(Base):
    """A group's current state. `revision` grows with every write (the compare-and-set key);
    `generation` with every rebalance. A forgotten group keeps its row (`forgotten`) so that
    its generation numbers are never handed out again."""

    __tablename__ = "groups"

    tenant: Mapped[str] = mapped_column(String(TENANT_LENGTH), primary_key=True)
    group_id: Mapped[str] = mapped_column(String(GROUP_ID_LENGTH), primary_key=True)
    kind: Mapped[str] = mapped_column(String(16))
    generation: Mapped[int] = mapped_column(BigInteger)
    revision: Mapped[int] = mapped_column(BigInteger)
    forgotten: Mapped[bool] = mapped_column(Boolean, default=False)
    grace_ms: Mapped[int] = mapped_column(BigInteger, default=0)
    state: Mapped[dict[str, Any]] = mapped_column(JSON)
    """members, assignment (and Streams target), leaving and lost members: see stickyd.service.groups."""
    created_at: Mapped[float] = mapped_column(Float)
    updated_at: Mapped[float] = mapped_column(Float)


class GenerationRow(Base):
    """One answered generation of a group: its members, solution and what the rebalance saw."""

    __tablename__ = "group_generations"

    tenant: Mapped[str] = mapped_column(String(TENANT_LENGTH), primary_key=True)
    group_id: Mapped[str] = mapped_column(String(GROUP_ID_LENGTH), primary_key=True)
    generation: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    kind: Mapped[str] = mapped_column(String(16))
    created_at: Mapped[float] = mapped_column(Float)
    members: Mapped[int] = mapped_column(Integer)
    moves: Mapped[int] = mapped_column(Integer)
    solver: Mapped[str] = mapped_column(String(64))
    record: Mapped[dict[str, Any]] = mapped_column(JSON)
    """the answer as returned (generation, solution, newcomers, leaving, held)."""
    summary: Mapped[dict[str, Any] | None] = mapped_column(JSON, nullable=True)
    """the answer's figures for the timeline: its stats without warnings, and the roster's ids
    (newcomers, departed, leaving, held); none on rows written before it was kept."""

    __table_args__ = (Index("ix_group_generations_created_at", "created_at"),)
