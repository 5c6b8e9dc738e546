"""The SDK's half of the fault suite, with real processes: ``profilerhub hub`` and ``profilerhub
worker`` on a real Redis, and real PyTorch training scripts (tests/e2e/jobs_stack.py).

Faults: the hub down for a whole run, the hub going away mid-run and not coming back before the
end, a bad token, the user's storage quota refusing files, a full spill folder. Afterwards each
test checks the state: nothing lost (every step of every run reaches a Ready job), nothing stuck
(no job left InProgress or Processing), nothing half-registered, nothing delivered twice.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from profilerhub import _spill
from tests.e2e.jobs_stack import JobStack, wait_for_file
from tests.support.hub import auth, cli_command, wait_for

# Several hub starts and PyTorch runs per test: past the suite's 300 s hang guard on a loaded
# machine. A guard against a hang, not a bound on speed.
pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

DOMAIN = "ml"


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory, redis_url: str) -> Iterator[JobStack]:
    # One hub process: a multi-process hub's supervisor restarts workers that miss its health
    # check on a loaded machine, which is not the fault under test here.
    env = {"PROFILERHUB_HUB_WORKERS": "1"}
    running = JobStack.start(tmp_path_factory.mktemp("faults-sdk"), redis_url, env=env)
    yield running
    running.stop()


@pytest.fixture
def hub_up(stack: JobStack) -> Iterator[JobStack]:
    """The stack with its hub answering, before and after the test (a test may stop it)."""
    if stack.hub is None or stack.hub.poll() is not None:
        stack.start_hub()
    yield stack
    if stack.hub is None or stack.hub.poll() is not None:
        stack.start_hub()


def _jobs(stack: JobStack, token: str, user: str, domain: str = DOMAIN) -> list[dict[str, Any]]:
    answer = httpx.get(f"{stack.url}/api/v1/domains/{domain}/users/{user}/jobs", headers=auth(token))
    answer.raise_for_status()
    return list(answer.json()["items"])


def _settled(stack: JobStack, token: str, user: str, domain: str = DOMAIN) -> list[dict[str, Any]]:
    """The user's jobs once none is InProgress or Processing any more, read one by one (summaries)."""
    found: list[dict[str, Any]] = []

    def settled() -> bool:
        found[:] = _jobs(stack, token, user, domain)
        return all(j["status"] in ("Ready", "Failed") for j in found)

    wait_for(settled, f"{user}'s jobs to settle (logs in {stack.tmp})", 180, 0.25)
    return [stack.job(token, j["job_id"], domain=domain, user=user) for j in found]


def _upload_spilled(stack: JobStack, spill: Path, token: str) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith("PROFILERHUB_")}
    return subprocess.run(
        [*cli_command(), "upload", "--spilled", "--hub", stack.url, "--token", token],
        env=base | {"PROFILERHUB_SPILL_DIR": str(spill), "COLUMNS": "1000"},  # no wrapped lines
        capture_output=True,
        text=True,
        timeout=300,
    )


def _spilled_bytes(spill: Path) -> int:
    return sum(p.stat().st_size for p in spill.rglob("*") if p.is_file())


def test_a_run_while_the_hub_is_down_is_delivered_by_the_next_run(hub_up: JobStack, tmp_path: Path) -> None:
    stack, spill = hub_up, tmp_path / "spill"
    token = stack.user_token(DOMAIN, "dana")
    stack.stop_hub()
    offline = stack.train(token, 8, env={"FLUSH": "3", "PROFILERHUB_SPILL_DIR": str(spill)})
    assert offline.returncode == 0 and "Traceback" not in offline.output, offline.output
    assert offline.output.count("acc=") == 8  # training never waited for the hub
    assert not offline.finish["complete_sent"] and offline.finish["dropped_files"] == {}
    assert offline.finish["spilled_files"]["job.json"] == 1 and offline.finish["spilled_files"]["torch"] >= 1
    assert f"profilerhub upload --spilled --spill-dir {spill} --hub {stack.url}" in offline.output

    stack.start_hub()
    online = stack.train(token, 3, env={"PROFILERHUB_SPILL_DIR": str(spill)})
    assert online.returncode == 0 and online.finish["completed"], online.output

    jobs = _settled(stack, token, "dana")
    assert sorted(j["summary"]["steps"]["count"] for j in jobs) == [3, 8], jobs  # two jobs, not three
    assert all(j["status"] == "Ready" and j["warnings"] == [] for j in jobs)
    assert _spill.entries(spill) == []


def test_profilerhub_upload_spilled_finishes_a_job_the_hub_left_open(
    hub_up: JobStack, tmp_path: Path
) -> None:
    stack, spill = hub_up, tmp_path / "spill"
    token = stack.user_token(DOMAIN, "ezra")
    gate = stack.tmp / "ezra-gone"

    def outage() -> None:
        wait_for_file(gate.with_suffix(".reached"))
        stack.stop_hub()  # registered, some files sent, then gone until after the run
        gate.with_suffix(".go").touch()

    env = {"GATES": f"4:{gate}", "FLUSH": "3", "PROFILERHUB_SPILL_DIR": str(spill)}
    run = stack.train(token, 10, env=env, on_output=outage)
    assert run.returncode == 0 and "Traceback" not in run.output, run.output
    assert not run.finish["complete_sent"] and run.finish["spilled_files"], run.finish
    (entry,) = _spill.entries(spill)
    registered = _spill.read_meta(entry)["hub_job"]["job_id"]

    stack.start_hub()
    (open_job,) = _jobs(stack, token, "ezra")
    assert open_job["job_id"] == registered and open_job["status"] == "InProgress"
    done = _upload_spilled(stack, spill, token)
    assert done.returncode == 0, done.stdout + done.stderr
    assert registered in done.stderr and "delivered" in done.stderr

    (job,) = _settled(stack, token, "ezra")  # the same job, resumed: nothing registered twice
    assert job["job_id"] == registered and job["status"] == "Ready", job["failure_reason"]
    assert job["summary"]["steps"]["count"] == 10 and job["summary"]["metrics"]["train:loss"]["count"] == 10
    assert _spill.entries(spill) == []


def test_a_bad_token_spills_the_run_with_a_clear_message_and_registers_nothing(
    hub_up: JobStack, tmp_path: Path
) -> None:
    stack, spill = hub_up, tmp_path / "spill"
    token = stack.user_token(DOMAIN, "fern")
    run = stack.train("forged-token", 5, env={"PROFILERHUB_SPILL_DIR": str(spill)})
    assert run.returncode == 0 and "Traceback" not in run.output, run.output
    assert run.output.count("acc=") == 5
    assert "rejected the token" in run.output and "profilerhub upload --spilled" in run.output
    assert run.finish["dropped_files"] == {} and sum(run.finish["spilled_files"].values()) > 0
    assert _jobs(stack, token, "fern") == []  # nothing half-registered

    refused = _upload_spilled(stack, spill, "still-forged")
    assert refused.returncode == 2 and "PROFILERHUB_TOKEN" in refused.stderr
    assert _jobs(stack, token, "fern") == [] and len(_spill.entries(spill)) == 1

    done = _upload_spilled(stack, spill, token)
    assert done.returncode == 0, done.stdout + done.stderr
    (job,) = _settled(stack, token, "fern")
    assert job["status"] == "Ready" and job["summary"]["steps"]["count"] == 5


def test_files_refused_by_the_quota_are_reported_at_complete_and_delivered_once_there_is_room(
    hub_up: JobStack, tmp_path: Path
) -> None:
    stack, spill = hub_up, tmp_path / "spill"
    domain = "quota"
    token = stack.user_token(domain, "gus")
    settings = {"settings": {"user_storage_quota_bytes": 6000}}
    assert httpx.patch(
        f"{stack.url}/api/v1/domains/{domain}", json=settings, headers=stack.admin()
    ).is_success

    run = stack.train(token, 6, env={"PROFILERHUB_SPILL_DIR": str(spill)})
    assert run.returncode == 0 and "Traceback" not in run.output, run.output
    assert run.finish["complete_sent"] and run.finish["spilled_files"], run.finish
    assert "StorageQuotaExceeded" in run.output or "storage quota" in run.output

    (partial,) = _settled(stack, token, "gus", domain)  # completed with what it had, not left open
    missing = partial["undelivered"]["missing_files"]
    assert missing == sum(run.finish["spilled_files"].values())
    assert partial["warnings"][0].startswith(f"{missing} file(s) not delivered")
    assert "profilerhub upload --spilled" in partial["warnings"][0]

    settings = {"settings": {"user_storage_quota_bytes": 0}}
    assert httpx.patch(
        f"{stack.url}/api/v1/domains/{domain}", json=settings, headers=stack.admin()
    ).is_success
    done = _upload_spilled(stack, spill, token)
    assert done.returncode == 0, done.stdout + done.stderr

    def reingested() -> bool:
        return stack.job(token, partial["job_id"], domain=domain, user="gus")["undelivered"] is None

    wait_for(reingested, "the delivery to reach the job", 60, 0.25)
    (job,) = _settled(stack, token, "gus", domain)
    assert job["job_id"] == partial["job_id"] and job["status"] == "Ready", job["failure_reason"]
    assert job["warnings"] == [] and job["summary"]["steps"]["count"] == 6
    assert job["summary"]["traces"], "the torch trace refused by the quota arrived with the delivery"


def test_the_spill_folder_stays_under_its_cap_and_counts_what_it_could_not_keep(
    hub_up: JobStack, tmp_path: Path
) -> None:
    stack, spill = hub_up, tmp_path / "spill"
    cap = 4000  # job.json and a few chunks fit; the torch trace does not
    token = stack.user_token(DOMAIN, "hana")
    stack.stop_hub()
    env = {"FLUSH": "3", "PROFILERHUB_SPILL_DIR": str(spill), "PROFILERHUB_SPILL_MAX_BYTES": str(cap)}
    run = stack.train(token, 8, env=env)
    assert run.returncode == 0 and "Traceback" not in run.output, run.output
    assert run.output.count("acc=") == 8
    assert "at its cap" in run.output and run.finish["dropped_files"], run.finish
    assert run.finish["spilled_bytes"] <= cap and _spilled_bytes(spill) <= cap + 4096  # + .spill.json
    (entry,) = _spill.entries(spill)
    lost = _spill.read_meta(entry)["lost_files"]
    assert lost == sum(run.finish["dropped_files"].values())

    stack.start_hub()
    done = _upload_spilled(stack, spill, token)
    assert done.returncode == 0, done.stdout + done.stderr
    (job,) = _settled(stack, token, "hana")
    assert job["undelivered"]["lost_files"] == lost  # what could not be kept is said, not hidden
    assert any("lost for good" in w for w in job["warnings"]), job["warnings"]
