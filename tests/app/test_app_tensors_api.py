"""The profiler app's tensors routes on a real ``ph.watch`` CPU run: one tensor's series (equal to
torch's statistics) while the job runs and once Ready, the full tensors, bad queries refused."""

from __future__ import annotations

import io
from pathlib import Path
from types import ModuleType

import numpy as np
from fastapi.testclient import TestClient

from profilerhub_worker.ingest import IngestContext, ingest_job
from tests.support.jobs import make_job
from tests.support.watchtrain import torch_stats, watched_run


def test_the_app_serves_a_tensors_series_live_and_ready_and_its_full_tensors(
    ctx: IngestContext, app_client: TestClient, tmp_path: Path
) -> None:
    import torch as torch_module

    torch: ModuleType = torch_module
    files, rec = watched_run(torch, tmp_path / "run")
    job_id, _ = make_job(ctx, files)
    one = f"api/jobs/{job_id}/tensors"
    want = [torch_stats(torch, rec.seen[("gradients/2.weight", "train", s)])["l2"] for s in range(4)]
    live = app_client.get(f"{one}/gradients/2.weight", params={"stat": "l2", "hist": "true"}).json()
    assert live["steps"] == [0, 1, 2, 3] and np.allclose(live["values"], want, rtol=2e-5)
    assert ingest_job(job_id, ctx) == "Ready"
    ready = app_client.get(f"{one}/gradients/2.weight", params={"stat": "l2", "hist": "true"}).json()
    assert ready == live
    (item, *_) = app_client.get(f"{one}/full").json()["items"]
    assert item["name"] == "weights/0.weight"
    data = app_client.get(f"{one}/full/{item['path']}").content
    want_full = rec.seen[("weights/0.weight", "train", item["step"])].numpy()
    assert np.array_equal(np.load(io.BytesIO(data), allow_pickle=False), want_full)
    for params in ({"stat": "median"}, {"mode": "test"}, {"rank": "-1"}, {"hist": "maybe"}):
        got = app_client.get(f"{one}/losses/loss", params=params)
        assert got.status_code == 400 and set(got.json()["error"]) == {"code", "message"}, got.text
    assert app_client.get(f"{one}/gradients/nope").status_code == 404
    assert app_client.get(f"{one}/full/tensors/full/rank0/nope.npy").status_code == 404
