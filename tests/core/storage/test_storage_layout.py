"""The key layout DESIGN.md fixes: {domain_id}/{user_id}/jobs/{job_id}/raw|processed/..., by ids."""

from __future__ import annotations

import pytest

from profilerhub_core.errors import InvalidInput
from profilerhub_core.storage import LocalStore, layout


def test_job_keys_follow_the_documented_layout() -> None:
    assert layout.domain_prefix("acme") == "acme/"
    assert layout.user_prefix("acme", "alice") == "acme/alice/"
    assert layout.jobs_prefix("acme", "alice") == "acme/alice/jobs/"
    assert layout.job_prefix("acme", "alice", "j-01") == "acme/alice/jobs/j-01/"
    assert layout.raw_prefix("acme", "alice", "j-01") == "acme/alice/jobs/j-01/raw/"
    assert layout.processed_prefix("acme", "alice", "j-01") == "acme/alice/jobs/j-01/processed/"
    assert layout.raw_key("acme", "alice", "j-01", "rank0/trace.json.gz") == (
        "acme/alice/jobs/j-01/raw/rank0/trace.json.gz"
    )
    assert layout.processed_key("acme", "alice", "j-01", "events.parquet") == (
        "acme/alice/jobs/j-01/processed/events.parquet"
    )


def test_relative_name_strips_the_folder() -> None:
    prefix = layout.raw_prefix("acme", "alice", "j1")
    assert layout.relative_name(prefix + "rank0/t.json", prefix) == "rank0/t.json"
    assert layout.relative_name("a/b/c", "a/b") == "c"
    with pytest.raises(InvalidInput):
        layout.relative_name("a/bc/d", "a/b")
    with pytest.raises(InvalidInput):
        layout.relative_name("a/b/", "a/b")


@pytest.mark.parametrize("name", ["", "../x", "a/b", "-lead", ".", "..", "x" * 129, "é", "a b"])
def test_unsafe_domain_and_user_ids_are_refused(name: str) -> None:
    with pytest.raises(InvalidInput, match="domain id"):
        layout.domain_prefix(name)
    with pytest.raises(InvalidInput, match="user id"):
        layout.user_prefix("acme", name)


@pytest.mark.parametrize("job_id", ["", ".", "..", "../x", "a/b", ".hidden", "-x", "a\\b", "x" * 129, "a b"])
def test_unsafe_job_ids_are_refused(job_id: str) -> None:
    with pytest.raises(InvalidInput, match="job id"):
        layout.job_prefix("acme", "alice", job_id)


@pytest.mark.parametrize("name", ["", "../../other-user/x", "/abs", "a//b", "trace\x00.json", "dir/"])
def test_unsafe_artifact_names_are_refused(name: str) -> None:
    with pytest.raises(InvalidInput, match="storage key"):
        layout.raw_key("acme", "alice", "j1", name)
    with pytest.raises(InvalidInput, match="storage key"):
        layout.processed_key("acme", "alice", "j1", name)


def test_a_users_prefix_never_lists_a_user_whose_name_extends_it(local_store: LocalStore) -> None:
    local_store.put(layout.raw_key("acme", "al", "j1", "t.json"), b"al's")
    local_store.put(layout.raw_key("acme", "alice", "j1", "t.json"), b"alice's")
    local_store.put(layout.raw_key("acme", "al", "j10", "t.json"), b"al's other job")
    assert [i.key for i in local_store.list(layout.user_prefix("acme", "al"))] == [
        "acme/al/jobs/j1/raw/t.json",
        "acme/al/jobs/j10/raw/t.json",
    ]
    assert local_store.delete_prefix(layout.job_prefix("acme", "al", "j1")) == 1
    assert local_store.get(layout.raw_key("acme", "al", "j10", "t.json")) == b"al's other job"
