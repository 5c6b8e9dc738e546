"""browser_sessions (console and app sign-ins, revocable) and api_tokens.created_by (impersonation).

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("api_tokens", schema=None) as batch_op:
        batch_op.add_column(sa.Column("created_by", sa.String(length=130), nullable=True))
    op.create_table(
        "browser_sessions",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("user_id", sa.String(length=36), nullable=False),
        sa.Column("secret_hash", sa.String(length=64), nullable=False),
        sa.Column("kind", sa.String(length=16), nullable=False),
        sa.Column("app_id", sa.String(length=36), nullable=True),
        sa.Column("token_id", sa.String(length=36), nullable=True),
        sa.Column("scopes", sa.JSON(), nullable=False),
        sa.Column("impersonated_by", sa.String(length=130), nullable=True),
        sa.Column("nonce", sa.String(length=64), nullable=True),
        sa.Column("via", sa.String(length=16), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("revoked_at", sa.DateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(
            ["user_id"],
            ["user_profiles.id"],
            name=op.f("fk_browser_sessions_user_id_user_profiles"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_browser_sessions")),
        sa.UniqueConstraint("nonce", name=op.f("uq_browser_sessions_nonce")),
        sa.UniqueConstraint("secret_hash", name=op.f("uq_browser_sessions_secret_hash")),
    )
    with op.batch_alter_table("browser_sessions", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_browser_sessions_token_id"), ["token_id"], unique=False)
        batch_op.create_index(batch_op.f("ix_browser_sessions_user_id"), ["user_id"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("browser_sessions", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_browser_sessions_user_id"))
        batch_op.drop_index(batch_op.f("ix_browser_sessions_token_id"))
    op.drop_table("browser_sessions")
    with op.batch_alter_table("api_tokens", schema=None) as batch_op:
        batch_op.drop_column("created_by")
