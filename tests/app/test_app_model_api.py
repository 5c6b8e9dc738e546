"""The Model page's views over a running job's streamed tensor chunks and a Ready job's
``processed/tensors.npz``: the per-layer heat map with its global norm and a tensor's histogram
shares, beside the tensors API's index and series (the page reads both); new chunks show at the
next read; bad parameters are 400, an unknown tensor 404, another user's job 404."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
from fastapi.testclient import TestClient

from profilerhub_analysis.tensor_records import record
from profilerhub_analysis.tensors import TensorTable
from profilerhub_core.storage.layout import TENSORS
from profilerhub_worker.ingest import IngestContext, ingest_job
from tests.support.jobs import jsonl_gz, make_job, open_app, sdk_files


def chunk(first: int, n: int, scale: float = 1.0) -> list[dict[str, Any]]:
    rng = np.random.default_rng(first)
    out = []
    for s in range(first, first + n):
        tensors = {
            "gradients/fc1.weight": rng.standard_normal((4, 3)) * scale,
            "gradients/fc2.weight": rng.standard_normal((3, 2)) * 0.1,
            "losses/loss": np.array(1.0 / (s + 1)),
        }
        out.append(record("train", s, tensors))
    out.append(record("eval", first, {"losses/loss": np.array(0.9)}, global_step=first + n - 1))
    return out


def test_a_running_jobs_tensors_are_read_from_its_chunks_and_grow_as_they_arrive(
    ctx: IngestContext, app_client: TestClient
) -> None:
    job_id, place = make_job(ctx, {"tensors/000000.jsonl.gz": jsonl_gz(chunk(0, 5))}, complete=False)
    index = app_client.get(f"api/jobs/{job_id}/tensors").json()
    assert "live" in index, index
    assert index["live"] and index["collections"] == ["gradients", "losses"]
    assert index["steps"]["train"] == [0, 1, 2, 3, 4] and index["modes"] == ["train", "eval"]
    heat = app_client.get(f"api/jobs/{job_id}/tensors/matrix", params={"collection": "gradients"}).json()
    assert heat["names"] == ["gradients/fc1.weight", "gradients/fc2.weight"] and heat["steps"] == [
        0,
        1,
        2,
        3,
        4,
    ]
    norms = np.array(heat["values"], dtype=float)
    assert np.allclose(heat["total"], np.sqrt((norms**2).sum(axis=0)), rtol=1e-5)
    ctx.store.put(place.raw_key("tensors/000001.jsonl.gz"), jsonl_gz(chunk(5, 3)))
    assert app_client.get(f"api/jobs/{job_id}/tensors").json()["steps"]["train"] == list(range(8))
    loss = app_client.get(
        f"api/jobs/{job_id}/tensors/losses/loss", params={"stat": "mean", "mode": "eval"}
    ).json()
    assert loss["values"] == [0.9, 0.9] and loss["global_steps"] == [4, 7]
    hist = app_client.get(f"api/jobs/{job_id}/tensors/hist", params={"name": "gradients/fc1.weight"}).json()
    assert len(hist["fractions"]) == 8 and all(abs(sum(row) - 1) < 1e-5 for row in hist["fractions"])
    assert len(hist["edges"]) + 2 == len(hist["fractions"][0])
    for view, params, status in (
        ("hist", {"name": "gradients/nope"}, 404),
        ("matrix", {"stat": "median"}, 400),
        ("hist", {"name": "losses/loss", "mode": "sideways"}, 400),
        ("hist", {}, 400),
    ):
        response = app_client.get(f"api/jobs/{job_id}/tensors/{view}", params=params)
        assert response.status_code == status and set(response.json()["error"]) == {"code", "message"}


def test_a_ready_jobs_tensors_are_ingests_table_and_a_job_without_any_says_so(
    ctx: IngestContext, app_client: TestClient
) -> None:
    job_id, place = make_job(ctx, sdk_files())
    assert ingest_job(job_id, ctx) == "Ready"
    assert app_client.get(f"api/jobs/{job_id}/tensors").json()["tensors"] == []
    other, place = make_job(ctx, sdk_files())
    assert ingest_job(other, ctx) == "Ready"
    ctx.store.put(place.processed_key(TENSORS), TensorTable.from_records(chunk(0, 4, scale=1e-9)).pack())
    index = app_client.get(f"api/jobs/{other}/tensors").json()
    assert not index["live"] and index["steps"]["train"] == [0, 1, 2, 3]
    heat = app_client.get(f"api/jobs/{other}/tensors/matrix", params={"stat": "l2"}).json()
    assert max(heat["values"][0]) < 1e-7  # the vanishing layer, as the page's heat map draws it


def test_the_model_api_does_not_serve_another_users_job(
    ctx: IngestContext, jobs_hub: Any, jobs_client: TestClient, jobs_seed: Any, tmp_path: Path
) -> None:
    jobs_seed.user("d1", "bob")
    job_id, _ = make_job(ctx, {"tensors/000000.jsonl.gz": jsonl_gz(chunk(0, 2))}, complete=False, user="bob")
    with open_app(ctx, jobs_hub, jobs_client, tmp_path / "store", "alice") as alice:
        for part in ("tensors/matrix", "tensors/hist?name=losses/loss"):
            assert alice.get(f"api/jobs/{job_id}/{part}").status_code == 404
