"""jobs.ingest_attempts: how many times ingest claimed a job (was counted from audit events).

Revision ID: 0002
Revises: 0001
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("jobs", schema=None) as batch_op:
        batch_op.add_column(sa.Column("ingest_attempts", sa.Integer(), server_default="0", nullable=False))
    # Jobs claimed before this column: their claims are the JobProcessing audit events.
    op.execute(
        "UPDATE jobs SET ingest_attempts = (SELECT count(*) FROM audit_events"
        " WHERE audit_events.target_type = 'Job' AND audit_events.target = jobs.id"
        " AND audit_events.action = 'JobProcessing')"
    )


def downgrade() -> None:
    with op.batch_alter_table("jobs", schema=None) as batch_op:
        batch_op.drop_column("ingest_attempts")
