"""Session lineage: browser_sessions.parent_id and .source, user_profiles.signed_out_at.

A session records the credential it descends from (the root's kind in ``source``, its token in
``token_id``, the session that made its link in ``parent_id``) and is live only while they are;
``signed_out_at`` voids one-time links issued before a "sign out everywhere".

Revision ID: 0014
Revises: 0013
Create Date: 2026-12-03
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("browser_sessions", schema=None) as batch_op:
        batch_op.add_column(sa.Column("parent_id", sa.String(length=36), nullable=True))
        batch_op.add_column(sa.Column("source", sa.String(length=16), server_default="token", nullable=False))
        batch_op.create_index(batch_op.f("ix_browser_sessions_parent_id"), ["parent_id"], unique=False)
    op.execute("UPDATE browser_sessions SET source = 'oidc' WHERE via = 'oidc'")
    with op.batch_alter_table("user_profiles", schema=None) as batch_op:
        batch_op.add_column(sa.Column("signed_out_at", sa.DateTime(timezone=True), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("user_profiles", schema=None) as batch_op:
        batch_op.drop_column("signed_out_at")
    with op.batch_alter_table("browser_sessions", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_browser_sessions_parent_id"))
        batch_op.drop_column("source")
        batch_op.drop_column("parent_id")
