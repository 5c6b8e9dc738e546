"""The tensors API through the hub, on a real ``ph.watch`` CPU run: it answers while the job runs
(from the chunks so far) and once Ready (from ``processed/tensors.npz``); ``create_trial`` over the
hub reads reductions equal to torch's own statistics; bad queries are 400, unknown tensors 404. A
two-process gloo run gives one series per rank, read from its local folders and, by name, from its
ranks' hub jobs merged into one trial, which the rules read on both ranks; the hub's own rules on
each rank's job, live and at ingest, read both ranks too."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest

from profilerhub.debug import create_trial
from profilerhub_analysis.rules import evaluate_rules
from profilerhub_analysis.rules.base import RuleData
from profilerhub_analysis.tensors import TensorTable
from profilerhub_core.db.models import Job
from profilerhub_core.jobstorage import place_of
from profilerhub_core.storage import layout
from profilerhub_worker.ingest import IngestContext, ingest_job
from profilerhub_worker.ingest.live_rules import evaluate_live
from tests.support.hub import auth
from tests.support.watchtrain import assert_trial_matches, gloo_run, torch_stats, watched_run

JOBS = "/api/v1/domains/d1/users/alice/jobs"


class _Signed:
    """The test client with the caller's token on every request, speaking ``HubHTTP.send``."""

    def __init__(self, client: Any, token: str) -> None:
        self.client, self.headers = client, auth(token)

    def send(self, method: str, path: str, params: Any = None) -> Any:
        return self.client.request(method, path, params=params or None, headers=self.headers)


@pytest.fixture(scope="module")
def torch() -> ModuleType:
    import torch

    torch.set_num_threads(1)
    return torch


def test_tensors_while_running_and_when_ready_equal_torchs_statistics(
    torch: ModuleType, jobs_client: Any, jobs_seed: Any, jobs_hub: Any, tmp_path: Path
) -> None:
    import profilerhub as ph

    files, rec = watched_run(torch, tmp_path)
    ph.finish()
    token = jobs_seed.user_token("d1", "alice")
    body = {"name": "watched", "rules": ["VanishingGradient", "ExplodingTensor"]}
    job_id = jobs_client.post(JOBS, json=body, headers=auth(token)).json()["job_id"]
    store = jobs_hub.state.services.storage
    with jobs_hub.state.services.sessions() as session:
        place = place_of(session.get(Job, job_id))
    chunks = sorted(n for n in files if n.startswith("tensors/") and n.endswith(".jsonl.gz"))
    one = f"{JOBS}/{job_id}/tensors"
    # The first chunks only: the run goes on. The first may hold no step's rows yet (a full
    # tensor's record goes out as it is saved, mid-step, and the collector may cut a chunk there).
    for name in chunks:
        store.put(place.raw_key(name), files[name])
        early = jobs_client.get(one, headers=auth(token)).json()
        if early["steps"].get("train"):
            break
    assert early["live"] and early["steps"]["train"][0] == 0
    for name, data in files.items():
        store.put(place.raw_key(name), data)
    live = jobs_client.get(one, headers=auth(token)).json()
    assert live["live"] and live["steps"]["train"] == [0, 1, 2, 3] and live["ranks"] == [0]

    assert jobs_client.post(f"{JOBS}/{job_id}/complete", headers=auth(token)).status_code == 202
    ctx = IngestContext(sessions=jobs_hub.state.services.sessions, store=store, max_file_bytes=4 << 20,
                        max_trace_bytes=64 << 20, stale_after=timedelta(minutes=5))  # fmt: skip
    assert ingest_job(job_id, ctx) == "Ready"
    stored = TensorTable.unpack(store.get(place.processed_key(layout.TENSORS)))
    ready = jobs_client.get(one, headers=auth(token)).json()
    assert (
        not ready["live"]
        and ready["tensors"] == live["tensors"]
        and ready["tensors"] == stored.index()["tensors"]
    )
    rules = {
        r["rule"]: r for r in jobs_client.get(f"{JOBS}/{job_id}/rules", headers=auth(token)).json()["rules"]
    }
    assert rules["ExplodingTensor"]["status"] == "NoIssuesFound", rules["ExplodingTensor"]

    series = jobs_client.get(
        f"{one}/gradients/0.weight", params={"stat": "l2", "hist": "true"}, headers=auth(token)
    ).json()
    want = [torch_stats(torch, rec.seen[("gradients/0.weight", "train", s)])["l2"] for s in range(4)]
    assert series["steps"] == [0, 1, 2, 3] and np.allclose(series["values"], want, rtol=2e-5)
    assert len(series["hist"]) == 4 and len(series["hist"][0]) == len(series["hist_edges"]) + 2
    eval_loss = jobs_client.get(
        f"{one}/losses/loss", params={"stat": "mean", "mode": "eval"}, headers=auth(token)
    )
    assert eval_loss.json()["steps"] == [0, 1, 2, 3]

    trial = create_trial(job_id, http=_Signed(jobs_client, token))
    assert assert_trial_matches(torch, trial, rec) > 80
    full = trial.tensor("weights/0.weight").value(2)
    assert np.array_equal(full, rec.seen[("weights/0.weight", "train", 2)].numpy())
    by_name = create_trial("watched", http=_Signed(jobs_client, token))
    assert by_name.steps() == [0, 1, 2, 3]

    for params, status in (({"stat": "median"}, 400), ({"mode": "test"}, 400), ({"rank": -1}, 422)):
        got = jobs_client.get(f"{one}/losses/loss", params=params, headers=auth(token))
        assert got.status_code == status and set(got.json()["error"]) == {"code", "message"}, got.text
    assert jobs_client.get(f"{one}/gradients/nope", headers=auth(token)).status_code == 404
    assert jobs_client.get(f"{one}/full/tensors/full/rank0/nope.npy", headers=auth(token)).status_code == 404
    assert jobs_client.get(one, params={"format": "xml"}, headers=auth(token)).status_code == 422


def _ctx(hub: Any) -> IngestContext:
    return IngestContext(sessions=hub.state.services.sessions, store=hub.state.services.storage,
                         max_file_bytes=4 << 20, max_trace_bytes=64 << 20,
                         stale_after=timedelta(minutes=5))  # fmt: skip


def _hub_job(
    client: Any, hub: Any, token: str, name: str, folder: Path, *,
    rules: list[Any] | None = None, complete: bool = True, run_id: str | None = None,
) -> str:  # fmt: skip
    """A hub job holding a local run's files, as the run's hub sink would have put them; Ready
    (or, without ``complete``, still running). ``run_id`` replaces its ``job.json``'s."""
    body: dict[str, Any] = {"name": name} | ({"rules": rules} if rules else {})
    job_id = client.post(JOBS, json=body, headers=auth(token)).json()["job_id"]
    store = hub.state.services.storage
    with hub.state.services.sessions() as session:
        place = place_of(session.get(Job, job_id))
    for path in folder.rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            if path.name == "job.json" and run_id is not None:
                data = json.dumps(json.loads(data) | {"run_id": run_id}).encode()
            store.put(place.raw_key(path.relative_to(folder).as_posix()), data)
    if complete:
        assert client.post(f"{JOBS}/{job_id}/complete", headers=auth(token)).status_code == 202
        assert ingest_job(job_id, _ctx(hub)) == "Ready"
    return str(job_id)


def _results(hub: Any, job_id: str) -> dict[str, Any]:
    with hub.state.services.sessions() as session:
        return {r["rule"]: r for r in session.get(Job, job_id).rule_results["rules"]}


@pytest.fixture(scope="module")
def gloo(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[int, Path]]:
    """One two-process gloo run for the module: its output folder and each rank's run folder."""
    out = tmp_path_factory.mktemp("gloo")
    return out, gloo_run(out)


def test_a_gloo_run_gives_one_series_per_rank_and_a_hub_trial_by_name_merges_its_rank_jobs(
    jobs_client: Any, jobs_seed: Any, jobs_hub: Any, gloo: tuple[Path, dict[int, Path]]
) -> None:
    out, runs = gloo
    local = create_trial(str(out))  # the two runs' folders, ddp and ddp-2
    assert local.workers() == [0, 1]
    loss = local.tensor("losses/loss")
    assert loss.steps(worker=0) == loss.steps(worker=1) == [0, 1, 2]
    assert loss.values(worker=0) != loss.values(worker=1)  # each rank's own batches
    grad = local.tensor("gradients/module.0.weight")
    for step in (0, 1, 2):  # DDP averaged the gradients: equal on both ranks
        a, b = (grad.reduction_value(step, "l2", worker=r) for r in (0, 1))
        assert a == pytest.approx(b, rel=1e-5)

    token = jobs_seed.user_token("d1", "alice")
    _hub_job(jobs_client, jobs_hub, token, "ddp", runs[1])  # an earlier run of the name: not merged
    ranks = {r: _hub_job(jobs_client, jobs_hub, token, "ddp", runs[r]) for r in (0, 1)}
    hub = create_trial("ddp", http=_Signed(jobs_client, token))
    assert hub.workers() == [0, 1] and hub._source.job_ids == [ranks[1], ranks[0]]  # type: ignore[attr-defined]
    assert hub.tensor_names() == local.tensor_names()
    for name in local.tensor_names():
        for r in (0, 1):
            steps = local.tensor(name).steps(worker=r)
            assert hub.tensor(name).steps(worker=r) == steps
            for step in steps:
                assert hub.tensor(name).reduction_values(step, worker=r) == pytest.approx(
                    local.tensor(name).reduction_values(step, worker=r), nan_ok=True
                )
    alone = create_trial(ranks[0], http=_Signed(jobs_client, token))  # by id: that job only
    assert alone.workers() == [0]

    config = [{"rule": "ClassImbalance", "parameters": {"samples": 10}}, "ExplodingTensor"]
    imbalance, exploding = evaluate_rules(config, RuleData(tensors=hub.table))
    assert imbalance["figures"]["checked"] == 2, imbalance  # each rank's labels, each rank's figures
    assert {"labels/loss (rank 0)", "labels/loss (rank 1)"} <= set(imbalance["figures"]), imbalance
    assert exploding["status"] == "NoIssuesFound" and exploding["figures"]["checked"] == len(
        hub.tensor_names()
    )


def test_the_hubs_rules_on_a_rank_job_read_every_rank_and_name_it(
    jobs_client: Any, jobs_seed: Any, jobs_hub: Any, gloo: tuple[Path, dict[int, Path]]
) -> None:
    """Each rank's job of the gloo run: its live scan and its ingest evaluate the rules over both
    ranks (the other's job found by name, world size and run id), each finding naming its rank;
    a job of the name from another run (another run id) is left out."""
    _, runs = gloo
    docs = [json.loads((runs[r] / "job.json").read_text()) for r in (0, 1)]
    assert docs[0]["run_id"] and docs[0]["run_id"] == docs[1]["run_id"]  # the launcher's env, alike
    token = jobs_seed.user_token("d1", "alice")
    first = r"^weights/module\.0\.weight$"
    rules = [{"rule": "AllZero", "parameters": {"threshold": 0, "tensor_regex": first}},
             {"rule": "ClassImbalance", "parameters": {"samples": 10}}]  # fmt: skip

    def ranks_seen(results: dict[str, Any]) -> list[int]:
        assert results["AllZero"]["status"] == "IssuesFound", results
        return sorted(f["figures"].get("rank", -1) for f in results["AllZero"]["findings"])

    live = {r: _hub_job(jobs_client, jobs_hub, token, "ddp-rules", runs[r], rules=rules, complete=False)
            for r in (0, 1)}  # fmt: skip
    assert evaluate_live(_ctx(jobs_hub), live[0]) == "evaluated"  # rank 1 read from its raw chunks
    got = _results(jobs_hub, live[0])
    assert ranks_seen(got) == [0, 1]
    assert {f["tensors"][0] for f in got["AllZero"]["findings"]} == {"weights/module.0.weight"}
    messages = sorted(f["message"] for f in got["AllZero"]["findings"])
    assert [m.split(" (train)")[0] for m in messages] == [
        f"weights/module.0.weight (rank {r})" for r in (0, 1)
    ]
    assert {"labels/loss (rank 0)", "labels/loss (rank 1)"} <= set(got["ClassImbalance"]["figures"])

    # At ingest: the rank finished first sees the other's job still running; the second, both.
    for r in (1, 0):
        assert jobs_client.post(f"{JOBS}/{live[r]}/complete", headers=auth(token)).status_code == 202
        assert ingest_job(live[r], _ctx(jobs_hub)) == "Ready"
        assert ranks_seen(_results(jobs_hub, live[r])) == [0, 1]

    # A rank whose name's other job is another run's (another run id): its own series only.
    _hub_job(jobs_client, jobs_hub, token, "ddp-alone", runs[1], rules=rules, complete=False, run_id="other")
    alone = _hub_job(jobs_client, jobs_hub, token, "ddp-alone", runs[0], rules=rules)
    assert ranks_seen(_results(jobs_hub, alone)) == [-1]
