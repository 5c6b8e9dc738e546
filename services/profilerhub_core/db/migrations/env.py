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
        sqlite = connection.dialect.name == "sqlite"
        if sqlite:
            # SQLite alters a table by copying it to a new one and dropping the old: with foreign
            # keys on, that drop deletes (ON DELETE CASCADE) every row referring to it, so a
            # downgrade dropping a jobs column emptied webhooks. Off while migrating (the pragma
            # only works outside a transaction), checked after, on again for the pool.
            connection.exec_driver_sql("PRAGMA foreign_keys=OFF")
        try:
            context.configure(
                connection=connection,
                target_metadata=target_metadata,
                render_as_batch=sqlite,
                compare_type=True,
            )
            with context.begin_transaction():
                context.run_migrations()
                if sqlite:
                    broken = connection.exec_driver_sql("PRAGMA foreign_key_check").fetchall()
                    if broken:
                        raise RuntimeError(
                            f"the migration left rows whose foreign keys point nowhere: {broken}"
                        )
            connection.commit()
        finally:
            if sqlite:
                connection.rollback()  # out of any transaction, so the pragma applies
                connection.exec_driver_sql("PRAGMA foreign_keys=ON")


engine = config.attributes.get("engine")
if engine is None:
    from sqlalchemy import create_engine

    engine = create_engine(config.get_main_option("sqlalchemy.url") or "", poolclass=pool.NullPool)
_run(engine)
