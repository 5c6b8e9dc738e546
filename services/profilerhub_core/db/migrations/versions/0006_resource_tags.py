"""resource_tags (SageMaker tags on domains, user profiles and apps) and the user profile's
updated_at and stored SageMaker UserSettings.

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("user_profiles", schema=None) as batch_op:
        batch_op.add_column(sa.Column("updated_at", sa.DateTime(timezone=True), nullable=True))
        batch_op.add_column(sa.Column("aws_settings", sa.JSON(), nullable=True))
    op.create_table(
        "resource_tags",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("resource", sa.String(length=48), nullable=False),
        sa.Column("domain_id", sa.String(length=36), nullable=True),
        sa.Column("user_id", sa.String(length=36), nullable=True),
        sa.Column("app_id", sa.String(length=36), nullable=True),
        sa.Column("key", sa.String(length=128), nullable=False),
        sa.Column("value", sa.String(length=256), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["app_id"], ["apps.id"], name=op.f("fk_resource_tags_app_id_apps"), ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(
            ["domain_id"], ["domains.id"], name=op.f("fk_resource_tags_domain_id_domains"), ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(
            ["user_id"],
            ["user_profiles.id"],
            name=op.f("fk_resource_tags_user_id_user_profiles"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_resource_tags")),
        sa.UniqueConstraint("resource", "key", name=op.f("uq_resource_tags_resource_key")),
    )
    with op.batch_alter_table("resource_tags", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_resource_tags_app_id"), ["app_id"], unique=False)
        batch_op.create_index(batch_op.f("ix_resource_tags_domain_id"), ["domain_id"], unique=False)
        batch_op.create_index(batch_op.f("ix_resource_tags_user_id"), ["user_id"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("resource_tags", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_resource_tags_user_id"))
        batch_op.drop_index(batch_op.f("ix_resource_tags_domain_id"))
        batch_op.drop_index(batch_op.f("ix_resource_tags_app_id"))
    op.drop_table("resource_tags")
    with op.batch_alter_table("user_profiles", schema=None) as batch_op:
        batch_op.drop_column("aws_settings")
        batch_op.drop_column("updated_at")
