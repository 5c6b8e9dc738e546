"""What the hub answers of a job's ``ph.watch`` tensors (``GET …/jobs/{job_id}/tensors[/…]``).

A Ready job's table is ``processed/tensors.npz`` (ingest wrote it); any other job's is grown from
its raw ``tensors/`` chunks so far, each read once per hub process (``tensors_api.JobTensors``),
so the API answers while the job runs. The answers are the analysis engine's (``tensors_api``).
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any

from profilerhub_core.db.models import Job, JobStatus
from profilerhub_core.errors import InvalidInput, NotFound
from profilerhub_core.jobstorage import JobPlace
from profilerhub_core.storage import ObjectStore, layout

if TYPE_CHECKING:
    from profilerhub_analysis.tensors import TensorTable
    from profilerhub_analysis.tensors_api import JobTensors

# The analysis engine (numpy) is imported on the first tensors request, not at the hub's start.


@functools.cache
def _tables() -> JobTensors:
    """The tables read so far, one cache per hub process."""
    from profilerhub_analysis.tensors_api import JobTensors

    return JobTensors()


def _raw_names(store: ObjectStore, place: JobPlace) -> list[str]:
    prefix = place.raw_prefix + layout.RAW_TENSORS + "/"
    return [layout.relative_name(o.key, place.raw_prefix) for o in store.list(prefix)]


def _table(store: ObjectStore, place: JobPlace, job: Job) -> tuple[TensorTable, bool]:
    def processed() -> bytes | None:
        try:
            return store.get(place.processed_key(layout.TENSORS))
        except NotFound:
            return None

    return _tables().table(
        job.id,
        ready=job.status is JobStatus.Ready,
        processed=processed,
        raw_names=lambda: _raw_names(store, place),
        read_raw=lambda rel: store.get(place.raw_key(rel)),
    )


def table_bytes(store: ObjectStore, place: JobPlace, job: Job) -> bytes:
    """The whole table in its stored form (``TensorTable.pack``), what the trial reads."""
    return _table(store, place, job)[0].pack()


def index(store: ObjectStore, place: JobPlace, job: Job) -> dict[str, Any]:
    from profilerhub_analysis import tensors_api

    table, live = _table(store, place, job)
    return tensors_api.index(table, job_id=job.id, live=live)


def series(store: ObjectStore, place: JobPlace, job: Job, name: str, **query: Any) -> dict[str, Any]:
    from profilerhub_analysis import tensors_api

    table, _ = _table(store, place, job)
    try:
        return tensors_api.series(table, name, job_id=job.id, **query)
    except tensors_api.TensorQueryError as exc:
        raise InvalidInput(str(exc)) from exc
    except KeyError as exc:
        raise NotFound(str(exc.args[0])) from exc


def full_list(store: ObjectStore, place: JobPlace, job: Job) -> dict[str, Any]:
    from profilerhub_analysis import tensors_api

    full = _tables().full(job.id, lambda: _raw_names(store, place), lambda rel: store.get(place.raw_key(rel)))
    return {"job_id": job.id, "items": tensors_api.full_items(full)}


def full_file(store: ObjectStore, place: JobPlace, job: Job, path: str) -> bytes:
    """One tensor saved whole (``.npy``), by the path its manifest names."""
    full = _tables().full(job.id, lambda: _raw_names(store, place), lambda rel: store.get(place.raw_key(rel)))
    if not any(f.path == path for f in full):
        raise NotFound(f"Job '{job.id}' has no full tensor at {path!r}")
    return store.get(place.raw_key(path))


__all__ = ["full_file", "full_list", "index", "series", "table_bytes"]
