"""A real GPU run through ingest: ``tests/data/cuda/h200_run/``, recorded on an NVIDIA H200 by the
SDK (``tests/data/cuda/record_h200_run.py``), ingested as the hub's worker does, on SQLite and
PostgreSQL. What the job shows is computed here from the raw files themselves: the trace's kernels
and copies, NVML's GPU samples, the steps, the losses, the watched tensors."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from profilerhub.debug import create_trial
from profilerhub_worker.ingest import IngestContext, ingest_job
from tests.support.jobs import make_job

RUN = Path(__file__).resolve().parents[1] / "data" / "cuda" / "h200_run"


def _lines(folder: str) -> list[dict]:
    return [json.loads(line) for p in sorted((RUN / folder).glob("*.jsonl.gz")) for line in gzip.open(p)]


def test_an_h200_run_ingests_with_its_kernels_gpu_samples_steps_and_tensors(ctx: IngestContext) -> None:
    files = {str(p.relative_to(RUN)): p.read_bytes() for p in RUN.rglob("*") if p.is_file()}
    job_id, place = make_job(ctx, files)
    assert ingest_job(job_id, ctx) == "Ready"
    summary = json.loads(ctx.store.get(place.processed_key("summary.json")))
    assert summary["warnings"] == []

    (trace_file,) = (RUN / "torch").glob("*.pt.trace.json.gz")
    events = json.loads(gzip.decompress(trace_file.read_bytes()))["traceEvents"]
    kernels = [e for e in events if e.get("cat") == "kernel"]
    (trace,) = summary["traces"]
    report = trace["report"]
    assert report["kernel_count"] == len(kernels) > 500
    assert report["kernel_time_us"] == pytest.approx(sum(e["dur"] for e in kernels))
    assert report["distinct_kernels"] == len({e["name"] for e in kernels})
    copies = {m["kind"]: m["count"] for m in report["memory_ops"]}
    htod = [e for e in events if e.get("cat") == "gpu_memcpy" and e["name"].startswith("Memcpy HtoD")]
    assert copies["Memcpy HtoD"] == len(htod) > 0
    assert report["launch_latency"]["count"] > 0
    facts = trace["tb_brief"]["facts"]
    assert facts["device_name"] == "NVIDIA H200" and facts["compute_major"] == 9

    samples = [g for s in _lines("system") for g in s.get("gpus", [])]
    util = summary["system"]["metrics"]["gpu0.util_percent"]
    assert util["max"] == max(g["util_percent"] for g in samples) and len(util["series"]) == len(samples)
    assert summary["system"]["metrics"]["gpu0.power_w"]["max"] > 0

    assert summary["steps"]["count"] == 12
    assert {a["name"]: a["count"] for a in summary["annotations"]} == dict.fromkeys(
        ["data", "forward", "backward", "optimizer"], 12
    )
    logged = [m["value"] for m in _lines("metrics") if m["name"] == "train:loss"]
    loss = summary["metrics"]["train:loss"]
    assert loss["count"] == 12 and loss["last"] == logged[-1]

    trial = create_trial(str(RUN))  # ph.watch's tensors, every 4 steps, read back from the raw folder
    assert trial.steps() == [0, 4, 8]
    grads = trial.tensor_names(collection="gradients")
    assert "gradients/encoder.layers.0.self_attn.in_proj_weight" in grads and len(grads) > 20
    assert summary["tensors"]["names"] == len(trial.tensor_names())
