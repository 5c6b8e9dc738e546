"""jobs.captures: the PyTorch-profiler captures asked of a running job.

``POST …/jobs/{id}/captures`` (and SageMaker's ``UpdateTrainingJob`` with a ``ProfilerConfig``)
append ``{"id", "steps", "start_step", "record_shapes", "requested_at", "by"}``; the newest rides
the answers to the run's uploads (``X-ProfilerHub-Capture``) until the run has done it. Null: none
asked (every job before this revision).

Revision ID: 0015
Revises: 0014
Create Date: 2026-12-03
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("jobs", schema=None) as batch_op:
        batch_op.add_column(sa.Column("captures", sa.JSON(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("jobs", schema=None) as batch_op:
        batch_op.drop_column("captures")
