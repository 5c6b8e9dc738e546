"""A full disk under the hub's local object store (a 4 MiB tmpfs mounted as its storage directory;
needs root, as CI runs): uploads answer 507/503 in the error shape, nothing half-written stays in
the store, and uploads work again once space is freed; an SDK run meanwhile still completes its
job, saying how many files it could not deliver."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.faults.faults import assert_error_shape, assert_settled, fill
from tests.support.hub import TEST_SECRET_KEY, auth

JOB = "/api/v1/domains/d1/users/alice/jobs"


def _leftovers(store: Path) -> list[str]:
    """Every file in the store but the test's own filler and the job's raw objects."""
    return sorted(
        str(p.relative_to(store))
        for p in store.rglob("*")
        if p.is_file() and p.name != "filler" and "/raw/" not in str(p)
    )


def _hub_on(disk: Path, hub_process: Any, tmp_path: Path) -> tuple[Any, str]:
    """``profilerhub hub`` storing in ``disk``, with domain d1 and user alice; (the hub, alice's token)."""
    from profilerhub_core.db.migrate import upgrade
    from profilerhub_core.db.session import make_engine

    database = f"sqlite:///{tmp_path / 'hub.db'}"
    engine = make_engine(database)
    upgrade(engine)
    engine.dispose()
    hub = hub_process(
        "hub",
        database_url=database,
        env={"PROFILERHUB_STORAGE_URL": disk.as_uri(), "PROFILERHUB_SECRET_KEY": TEST_SECRET_KEY},
    )
    admin = auth(hub.admin_token())
    with httpx.Client(base_url=hub.url, timeout=60) as client:
        client.post("/api/v1/domains", json={"name": "d1"}, headers=admin).raise_for_status()
        client.post("/api/v1/domains/d1/users", json={"name": "alice"}, headers=admin).raise_for_status()
        made = client.post("/api/v1/domains/d1/users/alice/tokens", json={}, headers=admin)
    return hub, str(made.json()["token"])


def test_a_full_disk_gives_503_keeps_nothing_half_written_and_recovers(
    small_disk: Path, hub_process: Any, tmp_path: Path
) -> None:
    hub, token = _hub_on(small_disk, hub_process, tmp_path)
    database = hub.env["PROFILERHUB_DATABASE_URL"]
    alice = auth(token)
    with httpx.Client(base_url=hub.url, timeout=60) as client:
        job = client.post(JOB, json={"name": "full-disk"}, headers=alice).json()["job_id"]
        files = f"{JOB}/{job}/files"
        assert client.put(f"{files}/job.json", content=b"{}", headers=alice).status_code == 201

        refused = []
        big = client.put(f"{files}/traces/big.json", content=b"x" * (6 << 20), headers=alice)
        refused.append(big)  # larger than the whole disk
        filler = fill(small_disk)  # what is left, to the last block
        refused += [
            client.put(f"{files}/metrics/000001.jsonl.gz", content=b"y" * 20_000, headers=alice),
            client.put(f"{files}/small.json", content=b"{}" * 3000, headers=alice),
        ]
        for answer in refused:
            assert_error_shape(answer, 503, 507)
        assert _leftovers(small_disk) == []  # no temporary part of a refused upload stays
        raw = sorted(p.name for p in small_disk.rglob("*") if "/raw/" in str(p) and p.is_file())
        assert raw == ["job.json"]  # only what was accepted

        filler.unlink()  # space freed: the same uploads go through
        again = client.put(f"{files}/metrics/000001.jsonl.gz", content=b"y" * 20_000, headers=alice)
        assert again.status_code == 201, again.text
        assert client.get(f"{JOB}/{job}", headers=alice).status_code == 200
        assert client.delete(f"{JOB}/{job}", headers=alice).status_code == 204
    assert_settled(database)
    print(f"\nfull disk: {len(refused)} uploads refused ({sorted({a.status_code for a in refused})}), "
          "0 left half-written, the next upload after freeing space stored")  # fmt: skip


def test_while_storage_answers_503_the_sdk_still_completes_the_job_saying_what_it_could_not_deliver(
    small_disk: Path, hub_process: Any, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    import profilerhub as ph

    hub, token = _hub_on(small_disk, hub_process, tmp_path)
    fill(small_disk)  # every file the run sends answers 503; the hub itself answers
    with caplog.at_level(logging.WARNING, logger="profilerhub"):
        ph.init(
            job="storage-503", hub_url=hub.url, token=token, flush_timeout_s=10, chunk_interval_s=0.2,
            spill_dir=tmp_path / "spill", capture_output=False,
        )  # fmt: skip
        for _ in range(3):
            with ph.step():
                pass
        summary = ph.finish()
    # Before the fix: the closing job.json was retried at the head of the queue until the
    # deadline, `complete` queued behind it never ran, and the job stayed InProgress, no warning.
    assert summary["complete_sent"], summary
    undelivered = sum(summary["spilled_files"].values()) + sum(summary["dropped_files"].values())
    assert undelivered > 0, summary
    job = httpx.get(summary["location"], headers=auth(token), timeout=60).json()
    assert job["completed_at"] is not None, job
    assert job["undelivered"]["missing_files"] == undelivered, job
    assert any("not delivered by the training run" in w for w in job["warnings"]), job
    assert "storage" in caplog.text and "retrying" in caplog.text  # the 503s were said, once
