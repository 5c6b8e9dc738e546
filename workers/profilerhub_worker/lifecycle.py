"""What the app tasks do, as plain functions of a ``WorkerContext`` (tests call them directly).

Each function re-reads the app row, acts only if the state is still the one it handles, and
moves it on with a compare-and-set (``app_states.transition``).  Work on one app is serialised
by a short Redis lock, so a duplicated task waits its turn or finds nothing left to do.

    spawn(ctx, app_id)    Pending  -> InService (instance answering) | Failed (with a reason)
    delete(ctx, app_id)   Deleting -> Deleted   (instance gone)
    poll_running(ctx)     InService apps whose instance died -> Failed
    reconcile(ctx)        the above, plus: Pending apps no worker took re-sent (however long
                          the queue was down), ones whose start was tried and did not finish
                          within ``pending_timeout`` failed, stuck Deleting re-sent, suspended
                          apps restarted, instances no app owns stopped
    cull_idle(ctx)        InService apps idle past their domain's idle_minutes -> Deleting
    suspend_all(ctx)      stop every local instance but keep the apps InService (``up`` exit)
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from datetime import datetime, timedelta
from typing import Any

import redis
import sqlalchemy as sa
from sqlalchemy.orm import Session

from profilerhub_core.db.models import App, AppStatus, Domain, UserProfile, utcnow
from profilerhub_core.domain_settings import DomainSettings
from profilerhub_core.records.app_states import transition
from profilerhub_core.records.apps import save_instance
from profilerhub_core.tasks import DELETE_APP, SPAWN_APP
from profilerhub_worker.context import WorkerContext
from profilerhub_worker.spawners import AppSpec, Spawner, SpawnError, make_spawner, spawner_class

log = logging.getLogger(__name__)

SUSPENDED = "suspended"
"""Key in ``spawner_state``: the instance was stopped on purpose by ``up``'s exit; restart it."""
SPAWN_TRIED = "spawn_tried_at"
"""Key in a Pending app's ``spawner_state``: when a worker first took its spawn task. The start
timeout counts from then: an app whose task never reached a worker (Redis was down) is re-sent,
not failed for the time it waited."""


def _lock_name(ctx: WorkerContext, app_id: str) -> str:
    return f"{ctx.key_prefix}:app-lock:{app_id}"


@contextmanager
def app_lock(ctx: WorkerContext, app_id: str) -> Iterator[bool]:
    """Hold the app's lock if nobody else does; yields whether it was acquired.

    The lock lives ``lock_seconds`` and a thread renews it while it is held, so a long start
    keeps it, and a worker killed mid-task frees the app for another worker within seconds.
    """
    # thread_local=False: the renewing thread must see the token the task thread acquired.
    lock = ctx.redis.lock(
        _lock_name(ctx, app_id), timeout=ctx.lock_seconds, blocking=False, thread_local=False
    )
    if not lock.acquire(blocking=False):
        yield False
        return
    done = threading.Event()

    def renew() -> None:
        while not done.wait(ctx.lock_seconds / 3):
            with suppress(redis.exceptions.RedisError):
                lock.reacquire()

    renewer = threading.Thread(target=renew, name=f"lock-{app_id}", daemon=True)
    renewer.start()
    try:
        yield True
    finally:
        done.set()
        renewer.join()
        # LockError: it lapsed (Redis was unreachable), and another holder may own it now.
        with suppress(redis.exceptions.LockError, redis.exceptions.RedisError):
            lock.release()


def _is_locked(ctx: WorkerContext, app_id: str) -> bool:
    return bool(ctx.redis.exists(_lock_name(ctx, app_id)))


def _spec(session: Session, app: App, ctx: WorkerContext) -> AppSpec:
    user = session.get(UserProfile, app.user_id)
    domain = session.get(Domain, app.domain_id)
    return AppSpec(
        app_id=app.id,
        domain=domain.name if domain else "",
        user=user.name if user else "",
        user_id=app.user_id,
        app_type=str(app.app_type),
        app_name=app.app_name,
        env={**ctx.app_env, "PROFILERHUB_APP_DOMAIN_ID": app.domain_id},  # the owner's storage folder
        resources=DomainSettings.of(domain.settings).app_resources() if domain else {},
    )


def _spawner(session: Session, app: App, ctx: WorkerContext) -> Spawner:
    return make_spawner(ctx.spawner, _spec(session, app, ctx), ctx.spawner_config, app.spawner_state)


@contextmanager
def _claimed(ctx: WorkerContext, app_id: str, status: AppStatus) -> Iterator[tuple[App, Spawner] | None]:
    """Hold the app's lock and yield ``(app, spawner)`` if the app is still in ``status``, else None."""
    with app_lock(ctx, app_id) as mine:
        if not mine:
            yield None
            return
        with ctx.sessions() as session:
            app = session.get(App, app_id)
            claimed = None if app is None or app.status != status else (app, _spawner(session, app, ctx))
        yield claimed


def _commit_transition(
    ctx: WorkerContext, app_id: str, from_: AppStatus, to: AppStatus, **fields: Any
) -> bool:
    with ctx.sessions() as session:
        moved = transition(session, app_id, from_, to, **fields)
        session.commit()
    return moved


def spawn(ctx: WorkerContext, app_id: str) -> str:
    """Start a Pending app's instance and move it to InService, or to Failed with the reason."""
    with _claimed(ctx, app_id, AppStatus.Pending) as claimed:
        if claimed is None:
            return "skipped"
        app, spawner = claimed
        if SPAWN_TRIED not in app.spawner_state:
            with ctx.sessions() as session:
                tried = {**app.spawner_state, SPAWN_TRIED: utcnow().isoformat()}
                save_instance(session, app_id, AppStatus.Pending, spawner_state=tried)
                session.commit()
        try:
            endpoint = spawner.start()
        except SpawnError as exc:
            _commit_transition(
                ctx, app_id, AppStatus.Pending, AppStatus.Failed, failure_reason=exc.reason, spawner_state={}
            )
            return "failed"
        moved = _commit_transition(
            ctx,
            app_id,
            AppStatus.Pending,
            AppStatus.InService,
            endpoint=endpoint,
            spawner_state=spawner.get_state(),
            last_activity_at=utcnow(),
        )
        if not moved:  # failed by the reconciler meanwhile: nobody will use this instance
            spawner.stop()
            return "superseded"
        return "started"


def delete(ctx: WorkerContext, app_id: str) -> str:
    """Stop a Deleting app's instance and move it to Deleted."""
    with _claimed(ctx, app_id, AppStatus.Deleting) as claimed:
        if claimed is None:
            return "skipped"
        claimed[1].stop()
        _commit_transition(
            ctx, app_id, AppStatus.Deleting, AppStatus.Deleted, endpoint=None, spawner_state={}
        )
        return "deleted"


def _fail_if_dead(ctx: WorkerContext, session: Session, app: App) -> bool:
    if app.spawner_state.get(SUSPENDED):
        return False
    status = _spawner(session, app, ctx).poll()
    if status is None:
        return False
    reason = (
        f"The app stopped unexpectedly ({status})"
        if isinstance(status, str)
        else (f"The app exited unexpectedly with status {status}")
    )
    moved = transition(session, app.id, AppStatus.InService, AppStatus.Failed, failure_reason=reason)
    session.commit()
    return moved


def poll_running(ctx: WorkerContext) -> int:
    """Fail every InService app whose instance is no longer running; return how many."""
    failed = 0
    with ctx.sessions() as session:
        for app in session.scalars(sa.select(App).where(App.status == AppStatus.InService)).all():
            failed += _fail_if_dead(ctx, session, app)
    return failed


def _restart_suspended(ctx: WorkerContext, app_id: str) -> None:
    with _claimed(ctx, app_id, AppStatus.InService) as claimed:
        if claimed is None or not claimed[0].spawner_state.get(SUSPENDED):
            return
        spawner = claimed[1]
        try:
            endpoint = spawner.start()
        except SpawnError as exc:
            _commit_transition(
                ctx,
                app_id,
                AppStatus.InService,
                AppStatus.Failed,
                failure_reason=f"Could not restart the app: {exc.reason}",
                spawner_state={},
            )
            return
        with ctx.sessions() as session:
            saved = save_instance(
                session, app_id, AppStatus.InService, endpoint=endpoint, spawner_state=spawner.get_state()
            )
            session.commit()
        if not saved:
            spawner.stop()


def _age(since: datetime) -> float:
    return (utcnow() - since).total_seconds()


def reconcile(ctx: WorkerContext) -> dict[str, int]:
    """Compare app records with running instances and heal the differences; return counts."""
    counts = {"failed": 0, "resent": 0, "restarted": 0, "orphans_stopped": 0}

    with ctx.sessions() as session:
        apps = session.scalars(sa.select(App).where(App.status != AppStatus.Deleted)).all()
        for app in apps:
            if app.status == AppStatus.InService:
                if app.spawner_state.get(SUSPENDED):
                    _restart_suspended(ctx, app.id)
                    counts["restarted"] += 1
                else:
                    counts["failed"] += _fail_if_dead(ctx, session, app)
            elif app.status == AppStatus.Pending:
                tried = app.spawner_state.get(SPAWN_TRIED)
                age = _age(app.status_changed_at)
                trying_for = _age(datetime.fromisoformat(tried)) if tried else 0.0
                if trying_for > ctx.pending_timeout and not _is_locked(ctx, app.id):
                    _spawner(session, app, ctx).stop()
                    counts["failed"] += transition(
                        session,
                        app.id,
                        AppStatus.Pending,
                        AppStatus.Failed,
                        failure_reason=f"The app did not start within {ctx.pending_timeout:.0f}s",
                        spawner_state={},
                    )
                    session.commit()
                elif age > ctx.resend_after and not _is_locked(ctx, app.id):
                    ctx.enqueue(SPAWN_APP, app.id)
                    counts["resent"] += 1
            elif (
                app.status == AppStatus.Deleting
                and _age(app.status_changed_at) > ctx.resend_after
                and not _is_locked(ctx, app.id)
            ):
                ctx.enqueue(DELETE_APP, app.id)
                counts["resent"] += 1
    counts["orphans_stopped"] = _stop_orphans(ctx)
    return counts


def _stop_orphans(ctx: WorkerContext) -> int:
    """Stop instances that no app row owns (deleted, failed, or replaced by a newer instance)."""
    cls = spawner_class(ctx.spawner)
    # Instances first, rows after, in a transaction of its own: a row is committed before its
    # instance starts, so every instance listed here has its row visible below.
    instances = list(cls.list_instances(ctx.spawner_config))
    stopped = 0
    with ctx.sessions() as session:
        for app_id, state in instances:
            app = session.get(App, app_id)
            if app is not None and (
                app.status in (AppStatus.Pending, AppStatus.Deleting) or _is_locked(ctx, app_id)
            ):
                continue  # a task is (or will be) working on it
            if (
                app is not None
                and app.status == AppStatus.InService
                and cls.instance_identity(app.spawner_state) == cls.instance_identity(state)
            ):
                continue
            orphan = cls.found(app_id, ctx.spawner_config, state)
            if orphan.poll() is None:
                log.warning("stopping app instance %s that no app record owns", app_id)
                stopped += 1
            orphan.stop()
    return stopped


def cull_idle(ctx: WorkerContext) -> int:
    """Ask to delete every InService app idle longer than its domain's ``idle_minutes``."""

    culled: list[str] = []
    with ctx.sessions() as session:
        rows = session.execute(
            sa.select(App, Domain.settings)
            .join(Domain, App.domain_id == Domain.id)
            .where(App.status == AppStatus.InService)
        ).all()
        for app, domain_settings in rows:
            idle_minutes = DomainSettings.of(domain_settings).idle_minutes
            last = app.last_activity_at or app.status_changed_at
            if (
                idle_minutes
                and utcnow() - last > timedelta(minutes=idle_minutes)
                and transition(
                    session,
                    app.id,
                    AppStatus.InService,
                    AppStatus.Deleting,
                    actor="culler",
                    failure_reason=None,
                )
            ):
                culled.append(app.id)
        session.commit()
    for app_id in culled:
        ctx.enqueue(DELETE_APP, app_id)
    return len(culled)


def suspend_all(ctx: WorkerContext) -> int:
    """Stop every running instance (``up``'s exit): an InService app's is marked to restart, a
    Pending app's start is undone (it is re-sent later), and instances no app owns are stopped."""
    suspended = 0
    with ctx.sessions() as session:
        for app in session.scalars(sa.select(App).where(App.status == AppStatus.InService)).all():
            spawner = _spawner(session, app, ctx)
            spawner.stop()
            save_instance(
                session,
                app.id,
                AppStatus.InService,
                endpoint=None,
                spawner_state={**spawner.get_state(), SUSPENDED: True},
            )
            suspended += 1
        for app in session.scalars(sa.select(App).where(App.status == AppStatus.Pending)).all():
            # Mid-spawn (its worker stopped or died first): stop what it started, and forget the
            # try, so the next start re-sends it instead of timing it out.
            _spawner(session, app, ctx).stop()
            save_instance(session, app.id, AppStatus.Pending, endpoint=None, spawner_state={})
        session.commit()
    cls = spawner_class(ctx.spawner)
    for app_id, state in list(cls.list_instances(ctx.spawner_config)):  # anything else left running
        cls.found(app_id, ctx.spawner_config, state).stop()
    return suspended
