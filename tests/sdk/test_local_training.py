"""A real PyTorch training loop on the CPU, instrumented with the SDK, writing to a local directory."""

from __future__ import annotations

import threading
from pathlib import Path
from types import ModuleType, SimpleNamespace

import psutil
import pytest

import profilerhub as ph
from profilerhub import _torch

from .rawfiles import files_of_dir, job_json, records, torch_traces
from .training import ANNOTATIONS, PRINTED_LOSS, train

STEPS = 6
PROFILED_STEPS = (2, 3)  # wait=1, warmup=1, active=2


def test_training_loop_writes_steps_annotations_metrics_system_and_torch_trace(
    torch: ModuleType, tmp_path: Path
) -> None:
    ph.init(
        job="mlp-local",
        output=tmp_path,
        torch_profiler={"wait": 1, "warmup": 1, "active": 2},
        chunk_interval_s=0.2,
        metric_definitions=[PRINTED_LOSS],
    )
    losses = train(torch, STEPS)
    summary = ph.finish()

    job_dir = tmp_path / "mlp-local"
    assert summary["location"] == str(job_dir.resolve()) and summary["completed"], summary
    files = files_of_dir(job_dir)
    assert "_SUCCESS" in files
    meta = job_json(files)
    assert meta["job"] == "mlp-local" and meta["status"] == "Completed"
    assert meta["start_ns"] < meta["end_ns"]
    assert meta["dropped"] == {"files": {}, "bytes": 0, "invalid_metrics": 0}
    assert meta["metric_definitions"] == [PRINTED_LOSS]
    assert meta["torch_version"] == torch.__version__ and meta["torch_profiler"]["active"] == 2

    ranges = records(files, "annotations")
    steps = sorted((r for r in ranges if r["kind"] == "step"), key=lambda r: r["step"])
    assert [s["name"] for s in steps] == [f"step_{i}" for i in range(STEPS)]
    assert all(s["depth"] == 0 and s["start_ns"] < s["end_ns"] for s in steps)
    for name in ANNOTATIONS:
        mine = sorted((r for r in ranges if r["name"] == name), key=lambda r: r["step"])
        assert [r["step"] for r in mine] == list(range(STEPS)), name
        for r, s in zip(mine, steps, strict=True):
            assert r["depth"] == 1 and s["start_ns"] <= r["start_ns"] <= r["end_ns"] <= s["end_ns"]
            assert r["thread_name"] == "MainThread"
    assert [r["step"] for r in ranges if r["name"] == "evaluate"] == [STEPS - 1]  # the decorator

    metrics = records(files, "metrics")
    logged = [m for m in metrics if m["name"] == "train:loss"]
    assert [m["step"] for m in logged] == list(range(STEPS))
    assert [m["value"] for m in logged] == losses
    printed = [m for m in metrics if m["name"] == "train:printed_loss"]
    assert [m["source"] for m in printed] == ["stdout"] * STEPS
    assert [m["value"] for m in printed] == [float(f"{v:.6f}") for v in losses]

    samples = records(files, "system")
    assert samples and all(len(s["cpu_percent_per_core"]) == psutil.cpu_count() for s in samples)
    assert all(s["mem_total_bytes"] > s["mem_used_bytes"] > 0 for s in samples)
    assert "disk_read_bytes_per_s" in samples[-1] and "net_recv_bytes_per_s" in samples[-1]

    (trace,) = torch_traces(files)
    events = trace["traceEvents"]
    step_names = {e["name"] for e in events if e.get("name", "").startswith("ProfilerStep#")}
    assert step_names == {f"ProfilerStep#{i}" for i in PROFILED_STEPS}
    assert any(e.get("cat") == "cpu_op" and e["name"] == "aten::addmm" for e in events)
    _assert_annotations_line_up_with_trace(trace, ranges)


def _assert_annotations_line_up_with_trace(trace: dict, ranges: list[dict]) -> None:
    """Each SDK range of a profiled step lies inside exactly one record_function twin, on the same clock."""
    base = trace["baseTimeNanoseconds"]
    spans: dict[tuple[str, int], list[tuple[float, float]]] = {}
    for e in trace["traceEvents"]:
        if e.get("cat") == "user_annotation":
            start = base + e["ts"] * 1000
            spans.setdefault((e["name"], e["tid"]), []).append((start, start + e["dur"] * 1000))
    profiled = [r for r in ranges if r["kind"] == "annotation" and r["step"] in PROFILED_STEPS]
    assert len(profiled) == len(ANNOTATIONS) * len(PROFILED_STEPS)
    matched: set[tuple[str, int, float, float]] = set()
    for r in profiled:
        # The SDK reads its clock just inside record_function's enter/exit (1 µs: ts rounding).
        twins = [
            (start, end)
            for start, end in spans.get((r["name"], r["thread"]), [])
            if start - 1000 <= r["start_ns"] and r["end_ns"] <= end + 1000
        ]
        assert len(twins) == 1, (r, spans.get((r["name"], r["thread"])))
        matched.add((r["name"], r["thread"], *twins[0]))
    # One twin per range and no twin shared: the ranges are the twins (no bound on how close, which
    # a loaded machine would break).
    assert len(matched) == len(profiled)


def test_a_torch_profiler_schedule_that_never_becomes_active_is_named_at_finish(
    torch: ModuleType, tmp_path: Path, sdk_log: pytest.LogCaptureFixture
) -> None:
    ph.init(job="too-short", output=tmp_path, torch_profiler={"wait": 5, "warmup": 2, "active": 2})
    train(torch, 3)
    summary = ph.finish()
    said = " ".join(r.getMessage() for r in sdk_log.records if r.levelname == "WARNING")
    assert "schedule never became active: the run had 3 ph.step() call(s)" in said
    assert "skip_first + wait + warmup = 7" in said
    assert torch_traces(files_of_dir(tmp_path / "too-short")) == [] and summary["completed"]
    finished = [r.getMessage() for r in sdk_log.records if "finished" in r.getMessage()]
    assert finished == [f"profilerhub: job too-short finished; {summary['uploaded_files']} file(s) in "
                        f"{(tmp_path / 'too-short').resolve()}"]  # fmt: skip


def test_annotations_from_many_threads_keep_their_own_nesting(tmp_path: Path) -> None:
    ph.init(job="threads", output=tmp_path, chunk_interval_s=0.1)
    barrier = threading.Barrier(4)

    def worker() -> None:
        barrier.wait()
        for _ in range(200):
            with ph.annotate("outer"), ph.annotate("inner"):
                pass

    threads = [threading.Thread(target=worker, name=f"loader-{i}") for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    ph.finish()

    ranges = records(files_of_dir(tmp_path / "threads"), "annotations")
    by_thread: dict[int, list[dict]] = {}
    for r in ranges:
        by_thread.setdefault(r["thread"], []).append(r)
    assert len(by_thread) == 4
    for rs in by_thread.values():
        assert {r["thread_name"] for r in rs} <= {f"loader-{i}" for i in range(4)}
        assert sorted((r["name"], r["depth"]) for r in rs) == [("inner", 1)] * 200 + [("outer", 0)] * 200


def test_sdk_calls_without_init_do_nothing_and_raise_nothing() -> None:
    assert ph.current_run() is None

    @ph.annotate("idle")
    def f(x: int) -> int:
        return x + 1

    with ph.step(), ph.annotate("x"):
        ph.log_metric("m", 1.0)
    assert f(1) == 2 and ph.finish() == {}


def test_steps_number_themselves_and_annotations_take_the_current_step(tmp_path: Path) -> None:
    ph.init(job="autostep", output=tmp_path)
    for _ in range(3):
        with ph.step(), ph.annotate("inner"):
            pass
    ph.finish()
    ranges = records(files_of_dir(tmp_path / "autostep"), "annotations")
    assert [(r["name"], r["step"], r["depth"]) for r in ranges] == [
        (name, i, depth) for i in range(3) for name, depth in (("inner", 1), (f"step_{i}", 0))
    ]


class FakeCudaTorch:
    """Stands in for a CUDA build of torch (none here): records NVTX pushes and pops."""

    def __init__(self) -> None:
        self.calls: list[str] = []
        nvtx = SimpleNamespace(
            range_push=lambda name: self.calls.append(f"push {name}"),
            range_pop=lambda: self.calls.append("pop"),
        )
        self.cuda = SimpleNamespace(is_available=lambda: True, nvtx=nvtx)
        self.autograd = SimpleNamespace(
            _profiler_enabled=lambda: False, profiler=SimpleNamespace(record_function=None)
        )


def test_on_cuda_annotations_and_steps_are_nvtx_ranges(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = FakeCudaTorch()
    monkeypatch.setattr(_torch, "_hooks", _torch.TorchHooks(fake))
    monkeypatch.setattr(_torch, "_hooks_checked", True)
    ph.init(job="nvtx", output=tmp_path)
    with ph.step(4), ph.annotate("forward"), ph.annotate("matmul"):
        pass
    ph.finish()
    assert fake.calls == ["push step_4", "push forward", "push matmul", "pop", "pop", "pop"]
