"""The storage sweeper removes what deleted jobs, users and domains left in storage, and nothing else."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

from profilerhub_core.db.models import Job
from profilerhub_core.jobstorage import JobPlace
from profilerhub_worker.ingest import IngestContext
from profilerhub_worker.sweep import sweep_storage
from tests.support.jobs import make_job, sdk_files


def _keys(ctx: IngestContext) -> set[str]:
    return {info.key for info in ctx.store.list("")}


def test_the_sweeper_removes_folders_no_row_owns_and_leaves_the_rest(
    ctx: IngestContext, jobs_seed: Any
) -> None:
    kept, kept_place = make_job(ctx, sdk_files())
    gone, gone_place = make_job(ctx, {"job.json": b"{}"})
    with ctx.sessions() as session:  # a job row deleted while its objects stayed (a crash between)
        session.delete(session.get(Job, gone))
        session.commit()
    ghost_user = JobPlace(kept_place.domain_id, str(uuid.uuid4()), str(uuid.uuid4()))
    ghost_domain = JobPlace(str(uuid.uuid4()), str(uuid.uuid4()), str(uuid.uuid4()))
    for place in (ghost_user, ghost_domain):
        ctx.store.put(place.raw_key("job.json"), b"{}")
        ctx.store.put(place.processed_key("summary.json"), b"{}")
    foreign = {"other-tool/data.bin", "d1/alice/jobs/j1/raw/job.json"}  # not the hub's shape: left alone
    for key in foreign:
        ctx.store.put(key, b"not the hub's")
    before = _keys(ctx)

    assert sweep_storage(ctx.sessions, ctx.store) == {"folders": 0, "objects": 0}  # all written just now
    assert _keys(ctx) == before

    later = datetime.now(UTC) + timedelta(hours=1)
    assert sweep_storage(ctx.sessions, ctx.store, now=later) == {"folders": 3, "objects": 5}
    left = _keys(ctx)
    assert {k for k in left if k.startswith(kept_place.prefix)} == {
        kept_place.raw_key(name) for name in sdk_files()
    }
    assert not any(k.startswith((gone_place.prefix, ghost_user.prefix, ghost_domain.prefix)) for k in left)
    assert foreign <= left
    assert kept in {k.split("/")[3] for k in left if k.count("/") > 3}
