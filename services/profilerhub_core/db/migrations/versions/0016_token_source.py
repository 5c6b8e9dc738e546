"""api_tokens.source: the kind of credential at the root of the chain that minted a token.

``password`` for tokens (and access keys) minted by ``profilerhub login``, an invitation, a
password session or a token descended from one: a password reset revokes those. Tokens minted
before this revision have none (their lineage was not recorded), and survive a reset as a token
an operator made does.

Revision ID: 0016
Revises: 0015
Create Date: 2026-12-03
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0016"
down_revision = "0015"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("api_tokens", schema=None) as batch_op:
        batch_op.add_column(sa.Column("source", sa.String(length=16), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("api_tokens", schema=None) as batch_op:
        batch_op.drop_column("source")
