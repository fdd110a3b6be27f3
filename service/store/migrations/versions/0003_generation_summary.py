"""Each retained generation's figures beside its answer (moves, loads, solver, proven, fallback,
solve time, roster), so that a group's timeline is read without decoding its answers. Rows
written before have none; the timeline picks their figures out of the answer instead.

Revision ID: 0003_generation_summary
Revises: 0002_tokens
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003_generation_summary"
down_revision = "0002_tokens"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("group_generations", sa.Column("summary", sa.JSON(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("group_generations") as batch:
        batch.drop_column("summary")
