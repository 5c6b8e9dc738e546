"""The series retention: roll Ready jobs' series up as they age, then delete them.

Run by beat every ``series_retention_seconds`` with the ``series_retention`` policy
(:mod:`profilerhub_core.retention`). For each Ready job whose tier changed since the last run (the
row's ``series_resolution_s`` and ``series_deleted_at`` say where it is), ``processed/series.npz``
is rewritten: the first change computes every coarser tier's aggregates from the full-resolution
samples at once (``rollup.roll_up``), later ones drop the finer tiers (``rollup.keep``), the last
deletes the file. A job's series never become finer again (a policy changed to finer tiers applies
to jobs not rolled yet); a job ingested again (its missing files arrived) starts at full
resolution.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import datetime, timedelta

import sqlalchemy as sa
from sqlalchemy.orm import Session

from profilerhub_analysis.rollup import keep, roll_up
from profilerhub_analysis.series import pack, unpack
from profilerhub_core.db.models import Job, JobStatus, utcnow
from profilerhub_core.errors import NotFound
from profilerhub_core.jobstorage import JobPlace
from profilerhub_core.records.states import rows_changed
from profilerhub_core.retention import SeriesRetention
from profilerhub_core.storage import ObjectStore
from profilerhub_core.storage.layout import SERIES

log = logging.getLogger("profilerhub.worker")


def apply_series_retention(
    sessions: Callable[[], Session],
    store: ObjectStore,
    policy: SeriesRetention,
    *,
    now: datetime | None = None,
) -> dict[str, int]:
    """Roll up or delete the series the policy says are due: ``{"rolled", "deleted"}`` job counts."""
    done = {"rolled": 0, "deleted": 0}
    if not policy.tiers:
        return done
    now = now or utcnow()
    first = policy.tiers[0]
    young = now - (first.until if first.resolution_s == 0 and first.until is not None else timedelta(0))
    with sessions() as session:
        rows = session.execute(
            sa.select(
                Job.id, Job.domain_id, Job.user_id, Job.completed_at, Job.updated_at, Job.series_resolution_s
            ).where(
                Job.status == JobStatus.Ready,
                Job.completed_at <= young,  # younger ones are all still at full resolution
                Job.series_deleted_at.is_(None),
            )
        ).all()
    for job_id, domain_id, user_id, completed_at, stamp, current in rows:
        assert completed_at is not None  # the query says so
        tier = policy.due(now - completed_at)
        if tier is not None and tier.resolution_s <= (current or 0.0):
            continue  # where it belongs (or coarser than a changed policy's tier)
        key = JobPlace(domain_id, user_id, job_id).processed_key(SERIES)
        if tier is None:
            if _record(sessions, job_id, stamp, series_deleted_at=now):  # the row first: see below
                store.delete(key)
                done["deleted"] += 1
            continue
        wanted = [r for r in policy.rolled_resolutions if r >= tier.resolution_s]
        try:
            series = unpack(store.get(key))
        except NotFound:  # ingested before series were written: nothing to roll up
            _record(sessions, job_id, stamp, series_resolution_s=tier.resolution_s)
            continue
        ns = [round(r * 1e9) for r in wanted]
        if not series.rollups:
            series = roll_up(series, ns)
        elif kept := [r for r in ns if r in series.rollups]:
            series = keep(series, kept)
        else:  # (debug: it would say so again every run)
            log.debug(
                "series retention: job %s is kept at %g s, which %s does not name", job_id, current, policy
            )
            continue
        if _unchanged(sessions, job_id, stamp):
            store.put(key, pack(series))
            _record(sessions, job_id, stamp, series_resolution_s=tier.resolution_s)
            done["rolled"] += 1
    if any(done.values()):
        log.info("series retention: rolled up %(rolled)d job(s), deleted the series of %(deleted)d", done)
    return done


# A job's row changes (``updated_at``) when it is ingested again: its series are then new, at full
# resolution, and must not be replaced by (or deleted for) what this run read before.


def _unchanged(sessions: Callable[[], Session], job_id: str, stamp: datetime) -> bool:
    with sessions() as session:
        return session.scalar(sa.select(Job.updated_at).where(Job.id == job_id)) == stamp


def _record(sessions: Callable[[], Session], job_id: str, stamp: datetime, **values: object) -> bool:
    """Write ``values`` on the job if its row is as read (Ready, same ``updated_at``); True if so."""
    with sessions() as session:
        same = sa.update(Job).where(Job.id == job_id, Job.status == JobStatus.Ready, Job.updated_at == stamp)
        changed = rows_changed(session.execute(same.values(**values)))
        session.commit()
    return changed > 0


__all__ = ["apply_series_retention"]
