"""The SDK's TensorBoard output: ``log_metric(..., tensorboard=True)`` scalars and a copied
``tensorboard_dir``, read back by TensorBoard's own loader (which checks every record's CRC)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

import profilerhub as ph
from profilerhub import _tensorboard


def scalars_of(folder: Path) -> dict[str, list[tuple[int, float]]]:
    """``{tag: [(step, value)]}`` as TensorBoard loads the run in ``folder``."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    acc = EventAccumulator(str(folder))
    acc.Reload()
    return {tag: [(e.step, e.value) for e in acc.Scalars(tag)] for tag in acc.Tags()["scalars"]}


def write_own_scalars(folder: Path, steps: int) -> None:
    """What a script's own writer does: tensorboard's event writer (as ``SummaryWriter`` uses)."""
    from tensorboard.compat.proto import event_pb2, summary_pb2
    from tensorboard.summary.writer.event_file_writer import EventFileWriter

    writer = EventFileWriter(str(folder))
    for step in range(steps):
        value = summary_pb2.Summary.Value(tag="own:acc", simple_value=step / 10)
        writer.add_event(
            event_pb2.Event(wall_time=time.time(), step=step, summary=summary_pb2.Summary(value=[value]))
        )
    writer.close()


def test_crc32c_is_castagnoli() -> None:
    assert _tensorboard.crc32c(b"123456789") == 0xE3069283  # the standard check value
    assert _tensorboard.crc32c(b"") == 0


def test_logged_metrics_and_the_tensorboard_dir_land_in_the_job_as_tensorboard_runs(tmp_path: Path) -> None:
    own = tmp_path / "runs" / "exp1"
    ph.init(job="tb-local", output=tmp_path / "out", chunk_interval_s=0.1, tensorboard_dir=tmp_path / "runs")
    for i in range(4):
        with ph.step(i):
            ph.log_metric("train:loss", 1.0 / (i + 1), tensorboard=True)
        ph.log_metric("train:lr", 0.1, step=i)  # not asked for TensorBoard
    ph.log_metric("train:huge", 1e300, step=9, tensorboard=True)  # past float32: +inf, not an error
    write_own_scalars(own, 3)
    summary = ph.finish()
    assert summary["completed"], summary

    job = tmp_path / "out" / "tb-local"
    board = scalars_of(job / "tensorboard")
    assert set(board) == {"train:loss", "train:huge"}
    assert [s for s, _ in board["train:loss"]] == [0, 1, 2, 3]
    assert board["train:loss"][3][1] == pytest.approx(0.25)
    assert board["train:huge"] == [(9, float("inf"))]
    assert scalars_of(job / "tensorboard" / "logdir" / "exp1")["own:acc"] == [
        (s, pytest.approx(s / 10)) for s in range(3)
    ]
    files = sorted(p.name for p in (job / "tensorboard").glob("*tfevents*"))
    assert files == sorted(files, key=lambda n: int(n.rsplit(".", 1)[1]))  # name order = write order
    import json

    meta = json.loads((job / "job.json").read_text())
    assert meta["files"]["tensorboard"] == len(files) + 1 and meta["tensorboard_dir"] == str(
        tmp_path / "runs"
    )


def test_a_changed_file_in_the_tensorboard_dir_is_sent_again_and_an_unchanged_one_is_not(
    tmp_path: Path,
) -> None:
    own = tmp_path / "runs"
    own.mkdir()
    (own / "a.tfevents").write_bytes(b"one")
    files = _tensorboard.TensorBoardFiles(own)
    assert list(files.files(final=True)) == [("tensorboard/logdir/a.tfevents", b"one")]
    assert list(files.files(final=True)) == []
    (own / "a.tfevents").write_bytes(b"one two")
    assert list(files.files(final=True)) == [("tensorboard/logdir/a.tfevents", b"one two")]
    assert list(files.files()) == []  # not final and the sync interval has not passed


@pytest.mark.parametrize("bad", ["s3://bucket/runs", ""])
def test_tensorboard_dir_must_be_a_local_folder(tmp_path: Path, bad: str) -> None:
    with pytest.raises(ValueError, match="tensorboard_dir"):
        ph.init(job="tb-bad", output=tmp_path, tensorboard_dir=bad)


def test_tensorboard_dir_that_is_a_file_is_refused(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    with pytest.raises(ValueError, match="is not a folder"):
        ph.init(job="tb-bad", output=tmp_path, tensorboard_dir=tmp_path / "file")
