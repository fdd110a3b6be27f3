"""Bearer tokens: the SHA-256 digest of each token, its tenant, created and revoked times.

Revision ID: 0002_tokens
Revises: 0001_groups
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002_tokens"
down_revision = "0001_groups"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "tokens",
        sa.Column("token_hash", sa.String(64), nullable=False),
        sa.Column("tenant", sa.String(255), nullable=False),
        sa.Column("created_at", sa.Float(), nullable=False),
        sa.Column("revoked_at", sa.Float(), nullable=True),
        sa.PrimaryKeyConstraint("token_hash", name=op.f("pk_tokens")),
    )
    op.create_index("ix_tokens_tenant", "tokens", ["tenant"])


def downgrade() -> None:
    op.drop_index("ix_tokens_tenant", table_name="tokens")
    op.drop_table("tokens")
