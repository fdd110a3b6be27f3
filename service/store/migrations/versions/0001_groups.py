"""Group state: one row per group and one per retained generation, keyed by tenant.

Revision ID: 0001_groups
Revises:
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001_groups"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "groups",
        sa.Column("tenant", sa.String(255), nullable=False),
        sa.Column("group_id", sa.String(255), nullable=False),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("generation", sa.BigInteger(), nullable=False),
        sa.Column("revision", sa.BigInteger(), nullable=False),
        sa.Column("forgotten", sa.Boolean(), nullable=False),
        sa.Column("grace_ms", sa.BigInteger(), nullable=False),
        sa.Column("state", sa.JSON(), nullable=False),
        sa.Column("created_at", sa.Float(), nullable=False),
        sa.Column("updated_at", sa.Float(), nullable=False),
        sa.PrimaryKeyConstraint("tenant", "group_id", name=op.f("pk_groups")),
    )
    op.create_table(
        "group_generations",
        sa.Column("tenant", sa.String(255), nullable=False),
        sa.Column("group_id", sa.String(255), nullable=False),
        sa.Column("generation", sa.BigInteger(), nullable=False),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("created_at", sa.Float(), nullable=False),
        sa.Column("members", sa.Integer(), nullable=False),
        sa.Column("moves", sa.Integer(), nullable=False),
        sa.Column("solver", sa.String(64), nullable=False),
        sa.Column("record", sa.JSON(), nullable=False),
        sa.PrimaryKeyConstraint("tenant", "group_id", "generation", name=op.f("pk_group_generations")),
    )
    op.create_index("ix_group_generations_created_at", "group_generations", ["created_at"])


def downgrade() -> None:
    op.drop_index("ix_group_generations_created_at", table_name="group_generations")
    op.drop_table("group_generations")
    op.drop_table("groups")
