"""An app names only its owner's storage folder, whatever credentials it holds: the profiler app's
store is rooted at ``{storage_url}/{domain_id}/{user_id}/`` and refuses keys that climb out of it,
and TensorBoard is given the owner's ``jobs/`` folder as its logdir (docs/kubernetes.md: this is
the soft isolation; prefix-scoped credentials make it hard)."""

from __future__ import annotations

from pathlib import Path

import pytest

from profilerhub_app.hub import HttpHub
from profilerhub_app.owned import OwnedJobs
from profilerhub_app.settings import AppServiceSettings
from profilerhub_app.tensorboard_app import owner_logdir
from profilerhub_core.errors import InvalidInput, Unauthorized


def settings(storage_url: str) -> AppServiceSettings:
    return AppServiceSettings(
        id="app-1",
        owner="alice",
        owner_id="u-alice",
        public_key="PEM",
        domain_id="d-1",
        storage_url=storage_url,
    )


def test_tensorboard_reads_the_owners_jobs_folder_only(tmp_path: Path) -> None:
    assert owner_logdir(settings(tmp_path.as_uri())) == f"{tmp_path}/d-1/u-alice/jobs/"
    assert owner_logdir(settings("s3://bucket/hubdata")) == "s3://bucket/hubdata/d-1/u-alice/jobs/"


def test_the_profiler_apps_store_is_rooted_at_the_owners_folder_and_stays_there(tmp_path: Path) -> None:
    (tmp_path / "d-1" / "u-bob" / "jobs" / "j1").mkdir(parents=True)
    (tmp_path / "d-1" / "u-bob" / "jobs" / "j1" / "job.json").write_text("{}")
    (tmp_path / "d-1" / "u-alice" / "jobs").mkdir(parents=True)
    owned = OwnedJobs(settings(tmp_path.as_uri()), HttpHub("", "app-1"))
    store = owned.store("d-1", "u-alice")
    assert list(store.list("")) == []  # bob's job is not under alice's root
    with pytest.raises(InvalidInput):
        store.get("../u-bob/jobs/j1/job.json")
    with pytest.raises(Unauthorized):
        OwnedJobs(owned.settings, owned.hub).store("d-1", "u-bob")  # the hub listed bob's jobs
