# ruff: noqa: F811  -- pytest fixtures imported from apps_stack are parameters here
"""The TensorBoard app end to end: a training script (a real process, the SDK uploading to the
real hub) logs metrics with ``tensorboard=True``, watches a model with ``ph.watch(...,
tensorboard=True)`` and fills a ``tensorboard_dir``; a real worker
then spawns real TensorBoard over its owner's jobs, which lists the run's scalars; the owner
reaches it through the proxy, in httpx and in Chromium, and nobody else does; and the same over
S3 (moto's server)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.e2e.apps_stack import AppStack, app_stack, browser, shared_stack  # noqa: F401  (fixtures)
from tests.support.hub import auth, wait_for

TB = "TensorBoard"
RUN = "tb-run-1/raw/tensorboard"  # TensorBoard names a run by its folder under the owner's jobs/

# A training script as a user writes it: SDK metrics mirrored to TensorBoard, and the script's own
# TensorBoard writer (tensorboard's, as torch's SummaryWriter uses) in the folder given to the SDK.
SCRIPT = r"""
import json, os, time
import profilerhub as ph
from tensorboard.compat.proto import event_pb2, summary_pb2
from tensorboard.summary.writer.event_file_writer import EventFileWriter

import torch

ph.init(job="tb-sdk", chunk_interval_s=0.2, flush_timeout_s=30, tensorboard_dir="runs")
model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
ph.watch(model, opt, collections=["weights", "gradients"], every=1, tensorboard=True)
own = EventFileWriter("runs")
for i in range(4):
    with ph.step(i):
        model(torch.randn(16, 4)).square().mean().backward()
        opt.step()
        opt.zero_grad()
    ph.log_metric("train:loss", 1.0 / (i + 1), tensorboard=True)
    value = summary_pb2.Summary.Value(tag="own:acc", simple_value=i / 10)
    own.add_event(event_pb2.Event(wall_time=time.time(), step=i, summary=summary_pb2.Summary(value=[value])))
own.close()
print("FINISHED " + json.dumps(ph.finish()), flush=True)
"""


def train_with_sdk(stack: AppStack, token: str, folder: Path) -> str:
    """Run ``SCRIPT`` against the stack's hub as the token's user; the job's id."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "train.py").write_text(SCRIPT)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PROFILERHUB_")}
    env |= {
        "PROFILERHUB_URL": stack.url,
        "PROFILERHUB_TOKEN": token,
        "PROFILERHUB_SPILL_DIR": str(folder / "spill"),
    }
    done = subprocess.run(
        [sys.executable, "train.py"], env=env, cwd=folder, capture_output=True, text=True, timeout=240
    )
    finished = [line for line in done.stdout.splitlines() if line.startswith("FINISHED ")]
    assert done.returncode == 0 and finished, done.stdout + done.stderr
    summary = json.loads(finished[-1][9:])
    assert summary["completed"], summary
    return str(summary["location"]).rstrip("/").rsplit("/", 1)[-1]


def owner_folder(stack: AppStack, token: str, domain: str, user: str) -> str:
    """``{domain_id}/{user_id}``: the owner's folder in the hub's storage."""
    with httpx.Client(base_url=stack.url, headers=auth(token), timeout=30) as client:
        domain_id = client.get(f"/api/v1/domains/{domain}").json()["domain_id"]
        user_id = client.get(f"/api/v1/domains/{domain}/users/{user}").json()["user_id"]
    return f"{domain_id}/{user_id}"


def write_scalar(folder: Path) -> Path:
    """An event file with a ``loss`` scalar (three steps) in ``folder``; its path."""
    from tensorboard.compat.proto import event_pb2, summary_pb2
    from tensorboard.summary.writer.event_file_writer import EventFileWriter

    writer = EventFileWriter(str(folder))
    for step in range(3):
        value = summary_pb2.Summary.Value(tag="loss", simple_value=1.0 / (step + 1))
        summary = summary_pb2.Summary(value=[value])
        writer.add_event(event_pb2.Event(wall_time=time.time(), step=step, summary=summary))
    writer.close()
    return next(folder.glob("*tfevents*"))


def wait_for_scalar(stack: AppStack, token: str, app_id: str, run: str = RUN) -> dict[str, Any]:
    """TensorBoard's scalar tags once it has loaded ``run`` (it loads in a background thread)."""
    tags: dict[str, Any] = {}

    def loaded() -> bool:
        tags.update(get(stack, token, app_id, "data/plugin/scalars/tags").json())
        return run in tags

    wait_for(loaded, f"TensorBoard listing run {run}", 60)
    return tags


@pytest.fixture(scope="module")
def board(shared_stack: AppStack) -> dict[str, str]:
    """alice's running TensorBoard app over her SDK run and one scalar written straight to her
    storage folder: her token, the app's id and the SDK job's two runs."""
    alice = shared_stack.user_token("tb", "alice")
    job_id = train_with_sdk(shared_stack, alice, shared_stack.home.parent / "train")
    folder = owner_folder(shared_stack, alice, "tb", "alice")
    write_scalar(shared_stack.home / "storage" / folder / "jobs" / RUN)  # the hub's default storage_url
    created = shared_stack.create(alice, "tb", "alice", app_type=TB)
    assert created.status_code == 202, created.text
    shared_stack.wait_status(alice, "tb", "alice", "InService", app_type=TB)
    return {
        "token": alice,
        "app_id": created.json()["app_id"],
        "sdk_run": f"{job_id}/raw/tensorboard",
        "own_run": f"{job_id}/raw/tensorboard/logdir",
    }


def get(stack: AppStack, token: str, app_id: str, path: str) -> httpx.Response:
    return httpx.get(f"{stack.url}/apps/{app_id}/{path}", headers=auth(token), timeout=30)


def test_owner_reads_her_scalar_through_the_proxy(shared_stack: AppStack, board: dict[str, str]) -> None:
    token, app_id = board["token"], board["app_id"]
    assert shared_stack.instance(app_id)["port"]  # a real process of the local spawner
    assert "loss" in wait_for_scalar(shared_stack, token, app_id)[RUN]
    assert sorted(get(shared_stack, token, app_id, "data/runs").json()) == sorted(
        [RUN, board["sdk_run"], board["own_run"]]
    )
    page = get(shared_stack, token, app_id, "")
    assert page.status_code == 200 and "<tb-webapp" in page.text


def test_owner_sees_the_scalars_her_sdk_run_logged(shared_stack: AppStack, board: dict[str, str]) -> None:
    token, app_id, sdk_run, own_run = board["token"], board["app_id"], board["sdk_run"], board["own_run"]
    tags = wait_for_scalar(shared_stack, token, app_id, sdk_run)
    assert "train:loss" in tags[sdk_run]  # ph.log_metric(..., tensorboard=True)
    assert "own:acc" in tags[own_run]  # the script's own writer, copied from tensorboard_dir
    scalars = get(shared_stack, token, app_id, f"data/plugin/scalars/scalars?run={sdk_run}&tag=train:loss")
    assert scalars.status_code == 200, scalars.text
    assert [(step, round(value, 4)) for _, step, value in scalars.json()] == [
        (0, 1.0),
        (1, 0.5),
        (2, 0.3333),
        (3, 0.25),
    ]


def test_owner_sees_her_watched_tensors_in_the_histograms_and_distributions_tabs(
    shared_stack: AppStack, board: dict[str, str]
) -> None:
    """``ph.watch(..., tensorboard=True)``: each tensor's |x| histogram per saved step, as the
    Histograms and Distributions plugins answer it, and its reductions as scalars."""
    token, app_id, sdk_run = board["token"], board["app_id"], board["sdk_run"]
    wait_for_scalar(shared_stack, token, app_id, sdk_run)
    tags = get(shared_stack, token, app_id, "data/plugin/histograms/tags").json()[sdk_run]
    assert {"weights/0.weight", "gradients/0.weight", "weights/2.weight"} <= set(tags), tags
    query = f"run={sdk_run}&tag=weights/0.weight"
    histograms = get(shared_stack, token, app_id, f"data/plugin/histograms/histograms?{query}")
    assert histograms.status_code == 200, histograms.text
    steps = [step for _, step, _ in histograms.json()]
    assert steps == [0, 1, 2, 3]
    counts = sum(bucket[2] for bucket in histograms.json()[0][2])
    assert counts == 32  # the 4 x 8 weights, each in one bucket
    distributions = get(shared_stack, token, app_id, f"data/plugin/distributions/distributions?{query}")
    assert distributions.status_code == 200 and len(distributions.json()) == 4, distributions.text
    scalars = get(shared_stack, token, app_id, "data/plugin/scalars/tags").json()[sdk_run]
    assert "weights/0.weight/l2" in scalars, sorted(scalars)


def test_nobody_but_the_owner_reaches_the_tensorboard(shared_stack: AppStack, board: dict[str, str]) -> None:
    app_id = board["app_id"]
    mallory = shared_stack.user_token("tb", "mallory")
    answer = get(shared_stack, mallory, app_id, "data/runs")
    assert answer.status_code == 404 and answer.json()["error"]["code"] == "ResourceNotFound"
    direct = f"http://127.0.0.1:{shared_stack.instance(app_id)['port']}/apps/{app_id}/data/runs"
    refused = httpx.get(direct, timeout=30)  # straight to the app's port, no hub token
    assert refused.status_code == 401 and refused.json()["error"]["code"] == "Unauthorized"
    assert httpx.get(direct, headers=auth(board["token"]), timeout=30).status_code == 401  # API token


@pytest.mark.browser
def test_owner_opens_tensorboard_in_chromium(
    shared_stack: AppStack, board: dict[str, str], browser: Any
) -> None:
    app_id = board["app_id"]
    signed = httpx.post(
        f"{shared_stack.url}/api/v1/domains/tb/users/alice/apps/{TB}/default/presigned-url",
        headers=auth(board["token"]),
        timeout=30,
    )
    signed.raise_for_status()
    context = browser.new_context()
    page = context.new_page()
    answer = page.goto(signed.json()["url"])
    assert answer is not None and answer.status == 200
    assert page.url == f"{shared_stack.url}/apps/{app_id}/"
    page.locator("tb-webapp").wait_for(state="attached")
    page.get_by_text("loss").first.wait_for(timeout=60_000)  # the front end fetched her scalar's tag
    context.close()


def test_owner_reads_her_scalar_from_s3_and_not_another_users(
    app_stack: Any, s3_server: dict[str, str], s3_bucket: str, tmp_path: Path
) -> None:
    import boto3

    stack = app_stack(
        beat=False,
        PROFILERHUB_STORAGE_URL=f"s3://{s3_bucket}/hubdata",
        PROFILERHUB_S3_ENDPOINT_URL=s3_server["endpoint_url"],
    )
    alice, bob = stack.user_token("tbs3", "alice"), stack.user_token("tbs3", "bob")
    s3 = boto3.client("s3", endpoint_url=s3_server["endpoint_url"], region_name=s3_server["region"])
    events = write_scalar(tmp_path / "events")
    mine = f"hubdata/{owner_folder(stack, alice, 'tbs3', 'alice')}/jobs/{RUN}/{events.name}"
    s3.upload_file(str(events), s3_bucket, mine)
    other = f"hubdata/{owner_folder(stack, bob, 'tbs3', 'bob')}/jobs/bobs-run/raw/tensorboard/{events.name}"
    s3.upload_file(str(events), s3_bucket, other)
    job_id = train_with_sdk(stack, alice, tmp_path / "train")  # the SDK's files go to the bucket too
    created = stack.create(alice, "tbs3", "alice", app_type=TB)
    assert created.status_code == 202, created.text
    stack.wait_status(alice, "tbs3", "alice", "InService", app_type=TB)
    app_id = created.json()["app_id"]
    assert "loss" in wait_for_scalar(stack, alice, app_id)[RUN]
    assert (
        "train:loss"
        in wait_for_scalar(stack, alice, app_id, f"{job_id}/raw/tensorboard")[f"{job_id}/raw/tensorboard"]
    )
    runs = [RUN, f"{job_id}/raw/tensorboard", f"{job_id}/raw/tensorboard/logdir"]
    assert sorted(get(stack, alice, app_id, "data/runs").json()) == sorted(runs)  # not bob's run
