"""Training metrics from the script's printed lines (SageMaker-style metric definitions)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

import profilerhub as ph

from .rawfiles import files_of_dir, job_json, records

DEFS = [
    {"Name": "train:loss", "Regex": r"loss=([0-9.]+)"},
    {"Name": "train:acc", "Regex": r"acc: ([0-9.]+)%"},
    {"Name": "val:loss", "Regex": r"^val loss ([-0-9.e]+)$"},
]


def test_printed_lines_become_metrics_and_pass_through_unchanged(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ph.init(job="printed", output=tmp_path, metric_definitions=DEFS)
    with ph.step(7):
        print("epoch 1 loss=0.25 acc: 91.5%")
        sys.stdout.write("loss=")  # a line written in pieces
        sys.stdout.write("0.125\nno metric here\n")
        print("val loss 1e-3", file=sys.stderr)
        print("loss=not-a-number")
    ph.log_metric("lr", float("nan"))
    ph.log_metric("bad", "abc")  # type: ignore[arg-type]
    summary = ph.finish()
    assert sys.stdout is not None and type(sys.stdout).__name__ != "TeeStream"

    out, err = capsys.readouterr()
    assert out == "epoch 1 loss=0.25 acc: 91.5%\nloss=0.125\nno metric here\nloss=not-a-number\n"
    assert err == "val loss 1e-3\n"
    got = [
        (m["name"], m["value"], m["step"], m["source"])
        for m in records(files_of_dir(tmp_path / "printed"), "metrics")
    ]
    assert got == [
        ("train:loss", 0.25, 7, "stdout"),
        ("train:acc", 91.5, 7, "stdout"),
        ("train:loss", 0.125, 7, "stdout"),
        ("val:loss", 0.001, 7, "stderr"),
        ("lr", None, 7, "log_metric"),  # NaN is kept as null with "nonfinite": "nan"
    ]
    # "loss=not-a-number" does not match the regex; "abc" is not a number: counted, not raised
    assert summary["invalid_metrics"] == 1


def test_printed_lines_are_the_jobs_log_in_order_up_to_its_byte_cap_the_rest_counted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PROFILERHUB_LOG_MAX_BYTES", "40")
    monkeypatch.setenv("RANK", "2")
    ph.init(job="plain", output=tmp_path)  # no metric definitions: the log is kept all the same
    print("first line")
    sys.stdout.write("second ")
    sys.stdout.write("line\n")
    print("to stderr", file=sys.stderr)
    print("this one passes the cap")
    print("and this")
    ph.finish()
    files = files_of_dir(tmp_path / "plain")
    assert [k for k in files if k.startswith("logs/")] == ["logs/rank2/000001.jsonl.gz"]
    lines = records(files, "logs")
    assert [(r["source"], r["message"]) for r in lines] == [
        ("stdout", "first line"), ("stdout", "second line"), ("stderr", "to stderr"),
    ]  # fmt: skip
    assert lines[0]["ts_ns"] <= lines[1]["ts_ns"] <= lines[2]["ts_ns"]
    counts = job_json(files)["logs"]
    assert counts == {"lines": 3, "bytes": 33, "dropped_lines": 2, "dropped_bytes": 33, "max_bytes": 40}


def test_capture_output_false_leaves_the_streams_alone(tmp_path: Path) -> None:
    stdout = sys.stdout
    ph.init(job="plain", output=tmp_path, capture_output=False)
    assert sys.stdout is stdout
    print("not kept")
    ph.finish()
    assert not any(k.startswith("logs/") for k in files_of_dir(tmp_path / "plain"))
