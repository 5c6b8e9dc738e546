"""jobs.duration_s, jobs.steps, jobs.gpus, jobs.ranks: the jobs list's figures on the row.

Ingest writes them when a job becomes Ready (partial jobs too), so the owner's job list
(``GET /apps/{app_id}/owner/jobs``) sorts and pages by them in SQL. Jobs ingested before this
revision keep them null (they sort last in either direction) until they are ingested again.

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None

_INTS = ("steps", "gpus", "ranks")


def upgrade() -> None:
    with op.batch_alter_table("jobs", schema=None) as batch_op:
        batch_op.add_column(sa.Column("duration_s", sa.Float(), nullable=True))
        for name in _INTS:
            batch_op.add_column(sa.Column(name, sa.Integer(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("jobs", schema=None) as batch_op:
        for name in ("duration_s", *_INTS):
            batch_op.drop_column(name)
