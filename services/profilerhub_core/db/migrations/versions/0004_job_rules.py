"""jobs.rules (the rules configured for the job) and jobs.rule_results (their latest evaluation).

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("jobs", schema=None) as batch_op:
        batch_op.add_column(sa.Column("rules", sa.JSON(), nullable=True))
        batch_op.add_column(sa.Column("rule_results", sa.JSON(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("jobs", schema=None) as batch_op:
        batch_op.drop_column("rule_results")
        batch_op.drop_column("rules")
