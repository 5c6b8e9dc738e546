"""Training metrics from the script's printed lines (SageMaker-style metric definitions)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

import profilerhub as ph

from .rawfiles import files_of_dir, records

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


def test_output_is_not_watched_without_metric_definitions(tmp_path: Path) -> None:
    stdout = sys.stdout
    ph.init(job="plain", output=tmp_path)
    assert sys.stdout is stdout
    ph.finish()
