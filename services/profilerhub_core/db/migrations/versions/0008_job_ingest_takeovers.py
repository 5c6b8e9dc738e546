"""jobs.ingest_takeovers: how often ingest took a job over from a worker that died holding it.

A worker killed mid-ingest (an operator, a node restart, the OOM killer) is not the job's failure,
so it no longer spends one of ``ingest_attempts``; these are counted apart, with a bound of their
own, so a job that kills every worker that reads it still ends Failed.

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("jobs", schema=None) as batch_op:
        batch_op.add_column(sa.Column("ingest_takeovers", sa.Integer(), server_default="0", nullable=False))


def downgrade() -> None:
    with op.batch_alter_table("jobs", schema=None) as batch_op:
        batch_op.drop_column("ingest_takeovers")
