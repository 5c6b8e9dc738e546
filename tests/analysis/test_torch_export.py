"""A trace freshly exported by the installed PyTorch profiler reads and analyses correctly."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path

import pytest

from profilerhub_analysis.build import load_trace
from profilerhub_analysis.report import analyze_file

PROFILE = """
import sys, torch
from torch.profiler import ProfilerActivity, profile, record_function, schedule

model = torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.ReLU(), torch.nn.Linear(64, 8))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
def export(p):
    p.export_chrome_trace(sys.argv[1])

with profile(activities=[ProfilerActivity.CPU], schedule=schedule(wait=0, warmup=1, active=3, repeat=1),
             profile_memory=True, on_trace_ready=export) as prof:
    for _ in range(4):
        with record_function("forward_backward"):
            loss = model(torch.randn(32, 64)).sum()
            loss.backward()
        opt.step()
        prof.step()
"""


@pytest.mark.slow
def test_trace_exported_by_installed_pytorch_is_analysed(tmp_path: Path) -> None:
    pytest.importorskip("torch", reason="torch is installed by `make install`; without it nothing to export")
    trace = tmp_path / "export.pt.trace.json"
    done = subprocess.run(
        [sys.executable, "-c", PROFILE, str(trace)], capture_output=True, text=True, timeout=240
    )
    assert done.returncode == 0, done.stderr[-2000:]
    raw = json.loads(trace.read_text())
    gz = tmp_path / "export.pt.trace.json.gz"
    gz.write_bytes(gzip.compress(trace.read_bytes()))

    report = analyze_file(gz)
    assert report["events"] == len(raw["traceEvents"])
    assert report["skipped_events"] == {}
    assert [s["name"] for s in report["steps"]] == [f"ProfilerStep#{i}" for i in (1, 2, 3)]
    assert all(s["cpu_only_us"] == s["duration_us"] > 0 for s in report["steps"])
    assert report["kernels"] == [] and report["temporal"] == [] and report["launch_latency"]["count"] == 0
    counters = load_trace(gz).counters.to_pylist()  # profile_memory=True: [memory] instants
    assert {c["name"] for c in counters} >= {"CPU memory allocated (bytes)"}
