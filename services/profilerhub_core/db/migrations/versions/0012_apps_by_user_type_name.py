"""An index on apps (user_id, app_type, app_name), deleted apps included.

Describing, opening and deleting an app finds it by its user, type and name: the live one, else
the most recently deleted. The unique index on those columns is partial (live apps only), so
neither database could use it there, and every such read scanned the whole apps table.

Revision ID: 0012
Revises: 0011
Create Date: 2026-12-01
"""

from __future__ import annotations

from alembic import op

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None

_COLUMNS = ["user_id", "app_type", "app_name"]


def upgrade() -> None:
    with op.batch_alter_table("apps", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_apps_user_id_app_type_app_name"), _COLUMNS, unique=False)


def downgrade() -> None:
    with op.batch_alter_table("apps", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_apps_user_id_app_type_app_name"))
