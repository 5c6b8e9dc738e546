"""Alembic migrations shipped in the package, driven from code (no alembic.ini needed).

``upgrade(engine)`` brings a database to the newest revision (``profilerhub db upgrade`` and
``profilerhub up`` call it); ``check_migrated(engine)`` raises ``SchemaNotMigrated`` when the
database is behind the code, which the hub does before serving.
"""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy.engine import Engine

from profilerhub_core.errors import Unavailable

MIGRATIONS_DIR = Path(__file__).resolve().parent / "migrations"


class SchemaNotMigrated(Unavailable):
    """The database is not at the revision this code needs."""


def alembic_config(engine: Engine | None = None) -> Config:
    """An Alembic config for the shipped migrations; ``engine`` is used by ``env.py`` when given."""
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    if engine is not None:
        config.attributes["engine"] = engine
    return config


def head_revision() -> str:
    heads = ScriptDirectory.from_config(alembic_config()).get_heads()
    if len(heads) != 1:
        raise RuntimeError(f"the shipped migrations have {len(heads)} heads: {heads}")
    return heads[0]


def current_revision(engine: Engine) -> str | None:
    with engine.connect() as connection:
        return MigrationContext.configure(connection).get_current_revision()


def upgrade(engine: Engine, revision: str = "head") -> None:
    command.upgrade(alembic_config(engine), revision)


def check_migrated(engine: Engine) -> None:
    """Raise ``SchemaNotMigrated`` (with what to run) unless the database is at the head revision."""
    current, head = current_revision(engine), head_revision()
    if current == head:
        return
    where = engine.url.render_as_string(hide_password=True)
    if current is None:
        raise SchemaNotMigrated(
            f"The database {where} has no ProfilerHub schema. Run `profilerhub db upgrade` first."
        )
    script = ScriptDirectory.from_config(alembic_config())
    if script.get_revision(current) is None:
        raise SchemaNotMigrated(
            f"The database {where} is at revision {current}, which this ProfilerHub does not know "
            "(it was migrated by a newer version). Upgrade ProfilerHub."
        )
    raise SchemaNotMigrated(
        f"The database {where} is at revision {current}; this ProfilerHub needs {head}. "
        "Run `profilerhub db upgrade`."
    )


__all__ = [
    "SchemaNotMigrated",
    "alembic_config",
    "check_migrated",
    "current_revision",
    "head_revision",
    "upgrade",
]
