"""webhook_deliveries.dedupe_key: what makes a delivery once only per webhook.

A distributed run's rank jobs each find the run's tensor rules' findings (every rank's series is
read on each); ``rule.IssuesFound`` is delivered once per webhook for the run, not once per rank:
its key names the rule and the run (``profilerhub_worker.ingest.actions``), unique per webhook.
Null: no such key (job.Ready, job.Failed, and every delivery before this revision).

Revision ID: 0018
Revises: 0017
Create Date: 2026-12-03
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0018"
down_revision = "0017"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("webhook_deliveries", schema=None) as batch_op:
        batch_op.add_column(sa.Column("dedupe_key", sa.String(length=200), nullable=True))
        batch_op.create_unique_constraint(
            batch_op.f("uq_webhook_deliveries_webhook_id_dedupe_key"), ["webhook_id", "dedupe_key"]
        )


def downgrade() -> None:
    with op.batch_alter_table("webhook_deliveries", schema=None) as batch_op:
        batch_op.drop_constraint(batch_op.f("uq_webhook_deliveries_webhook_id_dedupe_key"), type_="unique")
        batch_op.drop_column("dedupe_key")
