"""The shipped Alembic migrations: one head, upgrade from empty, and agreement with the models."""

from __future__ import annotations

import pytest
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory

from profilerhub_core.db.migrate import (
    SchemaNotMigrated,
    alembic_config,
    check_migrated,
    current_revision,
    head_revision,
    shipped_head,
    upgrade,
)
from profilerhub_core.db.models import Base
from profilerhub_core.db.session import make_engine


def test_migrations_have_a_single_head() -> None:
    assert len(ScriptDirectory.from_config(alembic_config()).get_heads()) == 1


def test_upgrade_from_empty_reaches_head_and_models_match(db_url: str) -> None:
    engine = make_engine(db_url)
    try:
        assert current_revision(engine) is None
        upgrade(engine)
        assert current_revision(engine) == head_revision()
        with engine.connect() as connection:
            context = MigrationContext.configure(connection, opts={"compare_type": True})
            assert compare_metadata(context, Base.metadata) == []
        upgrade(engine)  # a second upgrade is a no-op
        check_migrated(engine)
    finally:
        engine.dispose()


def test_check_migrated_refuses_an_empty_database_and_says_what_to_run(tmp_path) -> None:  # type: ignore[no-untyped-def]
    engine = make_engine(f"sqlite:///{tmp_path / 'empty.db'}")
    with pytest.raises(SchemaNotMigrated, match="profilerhub db upgrade"):
        check_migrated(engine)
    engine.dispose()


def test_live_app_names_are_unique_but_deleted_apps_are_not(hub_db_url: str) -> None:
    import sqlalchemy as sa
    from sqlalchemy.exc import IntegrityError
    from sqlalchemy.orm import Session

    from profilerhub_core.db.models import App, AppStatus, AppType, Role
    from profilerhub_core.records.domains import create_domain
    from profilerhub_core.records.users import create_user

    engine = make_engine(hub_db_url)
    try:
        with Session(engine) as session:
            domain = create_domain(session, "d1")
            user = create_user(session, domain, "alice", Role.user)
            for _ in range(2):
                session.add(
                    App(
                        domain_id=domain.id,
                        user_id=user.id,
                        app_type=AppType.DetailedProfiler,
                        status=AppStatus.Deleted,
                    )
                )
            session.add(App(domain_id=domain.id, user_id=user.id, app_type=AppType.DetailedProfiler))
            session.commit()
            session.add(App(domain_id=domain.id, user_id=user.id, app_type=AppType.DetailedProfiler))
            with pytest.raises(IntegrityError):
                session.commit()
            session.rollback()
            assert session.scalar(sa.select(sa.func.count()).select_from(App)) == 3
    finally:
        engine.dispose()


def test_shipped_head_read_from_the_files_is_alembics_head() -> None:
    # check_migrated trusts shipped_head() on every hub start; it must agree with Alembic.
    assert shipped_head() == head_revision()


def test_check_migrated_at_head_does_not_import_alembic(tmp_path) -> None:  # type: ignore[no-untyped-def]
    import subprocess
    import sys

    url = f"sqlite:///{tmp_path / 'db.sqlite'}"
    engine = make_engine(url)
    upgrade(engine)
    engine.dispose()
    code = (
        "import sys\n"
        "from profilerhub_core.db.migrate import check_migrated\n"
        "from profilerhub_core.db.session import make_engine\n"
        f"check_migrated(make_engine({url!r}))\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'alembic'))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_check_migrated_names_a_revision_this_version_does_not_know(tmp_path) -> None:  # type: ignore[no-untyped-def]
    import sqlalchemy as sa

    engine = make_engine(f"sqlite:///{tmp_path / 'db.sqlite'}")
    upgrade(engine)
    with engine.begin() as connection:
        connection.execute(sa.text("UPDATE alembic_version SET version_num = 'ffff'"))
    with pytest.raises(SchemaNotMigrated, match="ffff.*newer version"):
        check_migrated(engine)
    engine.dispose()


@pytest.mark.parametrize(
    ("before", "revision", "added"),
    [
        # the jobs list's figures (a job ingested before them keeps nulls, sorted last)
        ("0009", "0010", {"duration_s": "Float", "steps": "Integer", "gpus": "Integer", "ranks": "Integer"}),
        # what the series retention did (nulls: full resolution, as every job before)
        ("0010", "0011", {"series_resolution_s": "Float", "series_deleted_at": "DateTime"}),
    ],
)
def test_a_migration_adding_job_columns_adds_them_nullable_and_downgrades(
    db_url: str, before: str, revision: str, added: dict[str, str]
) -> None:
    # a downgrade drops them again and an upgrade brings them back
    import sqlalchemy as sa
    from alembic import command

    engine = make_engine(db_url)
    try:
        upgrade(engine, before)
        assert not added.keys() & {c["name"] for c in sa.inspect(engine).get_columns("jobs")}
        upgrade(engine, revision)
        columns = {c["name"]: c for c in sa.inspect(engine).get_columns("jobs")}
        assert all(columns[name]["nullable"] for name in added)
        assert all(isinstance(columns[name]["type"], getattr(sa, kind)) for name, kind in added.items())
        command.downgrade(alembic_config(engine), before)
        assert not added.keys() & {c["name"] for c in sa.inspect(engine).get_columns("jobs")}
        upgrade(engine)
        assert current_revision(engine) == head_revision()
    finally:
        engine.dispose()


def _plans_of_app_lookups(engine, user) -> list[str]:  # type: ignore[no-untyped-def]
    """The query plans of finding ``user``'s app by type and name, as describe (``get_user_app``)
    and open or delete (``get_app``) run it, each plan as one text."""
    from sqlalchemy import event
    from sqlalchemy.orm import Session

    from profilerhub_core.db.models import AppType
    from profilerhub_core.records import apps

    statements: list[tuple[str, object]] = []

    def record(_conn, _cursor, statement, parameters, _context, _many) -> None:  # type: ignore[no-untyped-def]
        statements.append((statement, parameters))

    event.listen(engine, "before_cursor_execute", record)
    try:
        with Session(engine) as session:
            apps.get_user_app(session, user.domain_id, user.name, AppType.DetailedProfiler, "default")
            apps.get_app(session, user, AppType.DetailedProfiler, "default")
    finally:
        event.remove(engine, "before_cursor_execute", record)
    plans = []
    engine.dispose()  # SQLite: a pooled connection keeps its prepared EXPLAINs of the old schema
    with engine.connect() as connection:
        if engine.dialect.name == "postgresql":  # a table this small is always cheapest to scan
            connection.exec_driver_sql("SET enable_seqscan = off")
        explain = "EXPLAIN QUERY PLAN " if engine.dialect.name == "sqlite" else "EXPLAIN "
        for statement, parameters in statements:
            rows = connection.exec_driver_sql(explain + statement, parameters).all()  # type: ignore[arg-type]
            plans.append("\n".join(" ".join(map(str, row)) for row in rows))
    return plans


def test_an_app_is_found_by_user_type_and_name_through_an_index_from_0012(db_url: str) -> None:
    # The unique index on (user_id, app_type, app_name) is partial (live apps only), and finding
    # an app includes deleted ones: before 0012 both databases scanned every app for it.
    from alembic import command
    from sqlalchemy.orm import Session

    from profilerhub_core.db.models import AppType, Role
    from profilerhub_core.records import apps, domains, users

    index = "ix_apps_user_id_app_type_app_name"
    engine = make_engine(db_url)
    try:
        upgrade(engine)  # the rows are made by today's models, then the schema goes back to 0011
        with Session(engine, expire_on_commit=False) as session:
            domain = domains.create_domain(session, "d1")
            alice = users.create_user(session, domain, "alice", Role.user)
            apps.create_user_app(session, domain, alice, AppType.DetailedProfiler, "default")
            session.commit()
        command.downgrade(alembic_config(engine), "0011")
        plans = _plans_of_app_lookups(engine, alice)
        assert len(plans) == 2 and not any(index in plan for plan in plans), plans
        if engine.dialect.name == "sqlite":
            assert all("SCAN apps" in plan for plan in plans), plans
        upgrade(engine, "0012")
        plans = _plans_of_app_lookups(engine, alice)
        assert len(plans) == 2 and all(index in plan for plan in plans), plans
        command.downgrade(alembic_config(engine), "0011")
        plans = _plans_of_app_lookups(engine, alice)
        assert not any(index in plan for plan in plans), plans
        upgrade(engine)
        assert current_revision(engine) == head_revision()
    finally:
        engine.dispose()
