"""Alembic migrations shipped in the package, driven from code (no alembic.ini needed).

``upgrade(engine)`` brings a database to the newest revision (``profilerhub db upgrade`` and
``profilerhub up`` call it); ``check_migrated(engine)`` raises ``SchemaNotMigrated`` when the
database is behind the code, which the hub does before serving.

``check_migrated`` runs on every hub start (and in every hub worker process), so it does not
import Alembic when the database is at the head: it reads ``alembic_version`` with one query and
finds the head by reading the ``revision``/``down_revision`` lines of the shipped migration
files (``shipped_head``; a test pins it to Alembic's own answer). Alembic (a few hundred ms of
imports) is loaded only to migrate or to explain a mismatch.
"""

from __future__ import annotations

import ast
import contextlib
from pathlib import Path
from typing import TYPE_CHECKING

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from profilerhub_core.errors import Unavailable

if TYPE_CHECKING:
    from alembic.config import Config

MIGRATIONS_DIR = Path(__file__).resolve().parent / "migrations"
VERSION_TABLE = "alembic_version"


class SchemaNotMigrated(Unavailable):
    """The database is not at the revision this code needs."""


def alembic_config(engine: Engine | None = None) -> Config:
    """An Alembic config for the shipped migrations; ``engine`` is used by ``env.py`` when given."""
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    if engine is not None:
        config.attributes["engine"] = engine
    return config


def head_revision() -> str:
    from alembic.script import ScriptDirectory

    heads = ScriptDirectory.from_config(alembic_config()).get_heads()
    if len(heads) != 1:
        raise RuntimeError(f"the shipped migrations have {len(heads)} heads: {heads}")
    return heads[0]


def _module_constants(path: Path) -> dict[str, object]:
    """The top-level ``name = <literal>`` assignments of a migration file, without importing it."""
    constants: dict[str, object] = {}
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target, value = node.targets[0], node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            target, value = node.target, node.value
        else:
            continue
        if isinstance(target, ast.Name):
            with contextlib.suppress(ValueError):
                constants[target.id] = ast.literal_eval(value)
    return constants


def shipped_head() -> str | None:
    """The head revision of the shipped migrations, read from their files (no Alembic import).

    ``None`` when that is not one clear answer (several heads, a revision not written as a
    literal); the caller then asks Alembic.
    """
    revisions: set[str] = set()
    parents: set[str] = set()
    for path in (MIGRATIONS_DIR / "versions").glob("*.py"):
        constants = _module_constants(path)
        revision, down = constants.get("revision"), constants.get("down_revision")
        if not isinstance(revision, str):
            return None
        revisions.add(revision)
        if isinstance(down, str):
            parents.add(down)
        elif isinstance(down, (tuple, list)):
            parents.update(str(d) for d in down)
    heads = revisions - parents
    return heads.pop() if len(heads) == 1 else None


def current_revision(engine: Engine) -> str | None:
    """The database's revision (``None`` for a database without the ProfilerHub schema)."""
    with engine.connect() as connection:
        if not sa.inspect(connection).has_table(VERSION_TABLE):
            return None
        versions = connection.execute(sa.text(f"SELECT version_num FROM {VERSION_TABLE}")).scalars().all()
    if len(versions) > 1:
        raise SchemaNotMigrated(f"The database has several migration heads {sorted(versions)}")
    return versions[0] if versions else None


def upgrade(engine: Engine, revision: str = "head") -> None:
    from alembic import command

    command.upgrade(alembic_config(engine), revision)


def downgrade(engine: Engine, revision: str) -> None:
    """Take the database back to ``revision`` (``base``: nothing of ProfilerHub's left), running
    each later migration's ``downgrade()``: what those revisions added (tables, columns) is dropped
    with its data."""
    from alembic import command

    command.downgrade(alembic_config(engine), revision)


def revisions() -> list[tuple[str, str]]:
    """``(revision, first line of its docstring)`` of every shipped migration, oldest first."""
    from alembic.script import ScriptDirectory

    script = ScriptDirectory.from_config(alembic_config())
    found = [(rev.revision, (rev.doc or "").strip().splitlines()[0] if rev.doc else "")
             for rev in script.walk_revisions()]  # fmt: skip
    return list(reversed(found))


def check_migrated(engine: Engine) -> None:
    """Raise ``SchemaNotMigrated`` (with what to run) unless the database is at the head revision."""
    current = current_revision(engine)
    if current is not None and current == shipped_head():
        return
    head = head_revision()
    if current == head:
        return
    where = engine.url.render_as_string(hide_password=True)
    if current is None:
        raise SchemaNotMigrated(
            f"The database {where} has no ProfilerHub schema. Run `profilerhub db upgrade` first."
        )
    from alembic.script import ScriptDirectory
    from alembic.util import CommandError

    try:
        known = ScriptDirectory.from_config(alembic_config()).get_revision(current) is not None
    except CommandError:
        known = False
    if not known:
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
    "shipped_head",
    "upgrade",
]
