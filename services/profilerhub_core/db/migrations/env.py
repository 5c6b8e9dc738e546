"""Alembic environment: runs the shipped migrations on the engine handed in by ``migrate.py``."""

from __future__ import annotations

from alembic import context
from sqlalchemy import pool
from sqlalchemy.engine import Engine

from profilerhub_core.db.models import Base

config = context.config
target_metadata = Base.metadata


def _run(engine: Engine) -> None:
    with engine.connect() as connection:
        context.configure(
            connection=connection,
            target_metadata=target_metadata,
            render_as_batch=connection.dialect.name == "sqlite",
            compare_type=True,
        )
        with context.begin_transaction():
            context.run_migrations()
        connection.commit()


engine = config.attributes.get("engine")
if engine is None:
    from sqlalchemy import create_engine

    engine = create_engine(config.get_main_option("sqlalchemy.url") or "", poolclass=pool.NullPool)
_run(engine)
