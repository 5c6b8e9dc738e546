"""jobs.series_resolution_s, jobs.series_deleted_at: what the series retention did to a job's series.

The retention task (``series_retention`` setting) rolls a Ready job's ``processed/series.npz`` up to
coarser resolutions as the job ages, then deletes it; the row says how far it went, so the task
picks the jobs due without reading their series. Both null: full resolution (every job before
this revision).

Revision ID: 0011
Revises: 0010
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("jobs", schema=None) as batch_op:
        batch_op.add_column(sa.Column("series_resolution_s", sa.Float(), nullable=True))
        batch_op.add_column(sa.Column("series_deleted_at", sa.DateTime(timezone=True), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("jobs", schema=None) as batch_op:
        batch_op.drop_column("series_deleted_at")
        batch_op.drop_column("series_resolution_s")
