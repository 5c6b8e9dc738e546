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
from datetime import datetime

import sqlalchemy as sa
from sqlalchemy.orm import Session

from profilerhub_analysis.rollup import keep, roll_up
from profilerhub_analysis.series import SERIES, pack, unpack
from profilerhub_core.db.models import Job, JobStatus, utcnow
from profilerhub_core.errors import NotFound
from profilerhub_core.jobstorage import JobPlace
from profilerhub_core.retention import SeriesRetention
from profilerhub_core.storage import ObjectStore

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
    with sessions() as session:
        rows = session.execute(
            sa.select(Job.id, Job.domain_id, Job.user_id, Job.completed_at, Job.series_resolution_s).where(
                Job.status == JobStatus.Ready, Job.completed_at.is_not(None), Job.series_deleted_at.is_(None)
            )
        ).all()
    for job_id, domain_id, user_id, completed_at, current in rows:
        assert completed_at is not None  # the query says so
        tier = policy.due(now - completed_at)
        if tier is not None and tier.resolution_s <= (current or 0.0):
            continue  # where it belongs (or coarser than a changed policy's tier)
        key = JobPlace(domain_id, user_id, job_id).processed_key(SERIES)
        if tier is None:
            store.delete(key)
            _record(sessions, job_id, series_deleted_at=now)
            done["deleted"] += 1
            continue
        wanted = [r for r in policy.rolled_resolutions if r >= tier.resolution_s]
        try:
            series = unpack(store.get(key))
        except NotFound:  # ingested before series were written: nothing to roll up
            _record(sessions, job_id, series_resolution_s=tier.resolution_s)
            continue
        ns = [round(r * 1e9) for r in wanted]
        if not series.rollups:
            series = roll_up(series, ns)
        elif kept := [r for r in ns if r in series.rollups]:
            series = keep(series, kept)
        else:
            log.warning(
                "series retention: job %s is kept at %g s, which the policy %s no longer names; left as is",
                job_id,
                current,
                policy,
            )
            continue
        store.put(key, pack(series))
        _record(sessions, job_id, series_resolution_s=tier.resolution_s)
        done["rolled"] += 1
    if any(done.values()):
        log.info("series retention: rolled up %(rolled)d job(s), deleted the series of %(deleted)d", done)
    return done


def _record(sessions: Callable[[], Session], job_id: str, **values: object) -> None:
    with sessions() as session:
        session.execute(
            sa.update(Job).where(Job.id == job_id, Job.status == JobStatus.Ready).values(**values)
        )
        session.commit()


__all__ = ["apply_series_retention"]
