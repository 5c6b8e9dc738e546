"""Rolling the schema back: every shipped migration's ``downgrade()`` runs, with data in every table
the schema has at that revision, and the database upgrades to the head again afterwards with its
rows kept and a schema equal to the models'. Tables and columns a newer migration adds are filled
the same way (from the database's own reflected schema), so a new migration is covered as it lands.
Also ``profilerhub db downgrade`` / ``history`` as a real process."""

from __future__ import annotations

import datetime as dt
import enum
import subprocess
import uuid
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext

from profilerhub_core.db.migrate import (
    VERSION_TABLE,
    check_migrated,
    current_revision,
    downgrade,
    head_revision,
    revisions,
    upgrade,
)
from profilerhub_core.db.models import Base
from profilerhub_core.db.session import make_engine
from tests.support.hub import cli_command


def _value(column: sa.Column[Any], connection: sa.Connection, tables: dict[str, sa.Table]) -> Any:
    """A value ``column`` accepts: a row that exists for a foreign key, else one of its type."""
    for fk in column.foreign_keys:
        target = tables[fk.column.table.name].c[fk.column.name]
        found = connection.execute(sa.select(target).limit(1)).scalar()
        if found is not None or not column.nullable:
            return found
        return None
    kind = column.type
    enums = getattr(kind, "enums", None)
    if enums:
        return enums[0]
    python: type | None
    try:
        python = kind.python_type
    except NotImplementedError:
        python = None
    if python is bool:
        return False
    if python is int:
        return 1
    if python is float:
        return 1.5
    if python is dt.datetime:
        return dt.datetime(2026, 1, 2, 3, 4, 5)
    if python in (dict, list) or isinstance(kind, sa.JSON):
        return {"k": "v"}
    if python is bytes:
        return b"x"
    if python is not None and issubclass(python, enum.Enum):
        return next(iter(python)).value
    length = getattr(kind, "length", None) or 32
    return uuid.uuid4().hex[: min(length, 32)]


def _fill_every_table(engine: sa.Engine) -> None:
    """One row in each table that has none, in foreign-key order, every column given a value."""
    with engine.begin() as connection:
        metadata = sa.MetaData()
        metadata.reflect(connection)
        for table in metadata.sorted_tables:
            if (
                table.name == VERSION_TABLE
                or connection.execute(sa.select(sa.func.count()).select_from(table)).scalar()
            ):
                continue
            row = {
                column.name: _value(column, connection, metadata.tables)
                for column in table.columns
                if not (column.autoincrement is True and column.primary_key)
            }
            connection.execute(table.insert().values(row))


def _counts(engine: sa.Engine) -> dict[str, int]:
    with engine.connect() as connection:
        metadata = sa.MetaData()
        metadata.reflect(connection)
        return {
            name: int(connection.execute(sa.select(sa.func.count()).select_from(table)).scalar() or 0)
            for name, table in metadata.tables.items()
            if name != VERSION_TABLE
        }


def test_every_migration_downgrades_with_data_in_every_table_and_upgrades_again(db_url: str) -> None:
    engine = make_engine(db_url)
    try:
        shipped = [rev for rev, _ in revisions()]
        assert shipped[-1] == head_revision()
        for rev in shipped:  # upgrade one revision at a time, each table filled as it appears
            upgrade(engine, rev)
            _fill_every_table(engine)
        at_head = _counts(engine)
        assert set(at_head) == set(Base.metadata.tables) and all(at_head.values()), at_head
        for rev in reversed(shipped[:-1]):  # downgrade one at a time, with everything still in
            before = _counts(engine)
            downgrade(engine, rev)
            assert current_revision(engine) == rev
            after = _counts(engine)
            # A table that stays keeps its rows (SQLite's table rebuilds must not cascade deletes).
            assert {name: before[name] for name in after} == after, (rev, before, after)
        kept = _counts(engine)
        upgrade(engine)  # and up again, over the rows the first revision's tables kept
        assert current_revision(engine) == head_revision()
        assert {name: n for name, n in _counts(engine).items() if name in kept} == kept
        with engine.connect() as connection:
            context = MigrationContext.configure(connection, opts={"compare_type": True})
            assert compare_metadata(context, Base.metadata) == []
        check_migrated(engine)
        _fill_every_table(engine)
        downgrade(engine, "base")
        assert _counts(engine) == {} and current_revision(engine) is None
    finally:
        engine.dispose()


def _db(home: Path, url: str, *args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    env = {"PATH": "/usr/bin:/bin", "PROFILERHUB_HOME": str(home), "PROFILERHUB_DATABASE_URL": url,
           "COLUMNS": "1000"}  # fmt: skip
    return subprocess.run(
        [*cli_command(), "db", *args], env=env, input=stdin, capture_output=True, text=True, timeout=120
    )


def test_db_downgrade_asks_first_says_what_it_undoes_and_upgrade_comes_back(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'hub.db'}"
    assert _db(tmp_path, url, "upgrade").returncode == 0
    head = head_revision()
    previous = [rev for rev, _ in revisions()][-2]
    unknown = _db(tmp_path, url, "downgrade", "9999", "--yes")
    assert unknown.returncode == 2 and "not a revision" in unknown.stderr, unknown.stderr
    forward = _db(tmp_path, url, "downgrade", head, "--yes")
    assert forward.returncode == 2 and "already at" in forward.stderr, forward.stderr
    refused = _db(tmp_path, url, "downgrade", previous, stdin="n\n")
    assert refused.returncode == 1 and f"{head} (" in refused.stdout, (refused.stdout, refused.stderr)
    engine = make_engine(url)
    try:
        assert current_revision(engine) == head  # nothing changed
        done = _db(tmp_path, url, "downgrade", previous, "--yes")
        assert done.returncode == 0 and f"downgraded from {head} to {previous}" in done.stdout, done.stderr
        assert current_revision(engine) == previous
        history = _db(tmp_path, url, "history").stdout.splitlines()
        assert [line.split()[0] for line in history][-1] == head
        assert any(line.startswith(f"{previous} (current)") for line in history), history
        assert _db(tmp_path, url, "upgrade").returncode == 0
        assert current_revision(engine) == head
    finally:
        engine.dispose()
