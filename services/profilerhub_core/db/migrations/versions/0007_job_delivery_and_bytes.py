"""jobs.undelivered (what the run's complete said it could not deliver) and jobs.raw_bytes (the
raw files' size, for the per-user storage quota).

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("jobs", schema=None) as batch_op:
        batch_op.add_column(sa.Column("undelivered", sa.JSON(), nullable=True))
        batch_op.add_column(sa.Column("raw_bytes", sa.BigInteger(), server_default="0", nullable=False))


def downgrade() -> None:
    with op.batch_alter_table("jobs", schema=None) as batch_op:
        batch_op.drop_column("raw_bytes")
        batch_op.drop_column("undelivered")
