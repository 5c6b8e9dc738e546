"""ph.init refuses invalid arguments up front, with a message that says what to write instead."""

from __future__ import annotations

from pathlib import Path

import pytest

import profilerhub as ph


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"sample_interval_s": 0.05}, "sample_interval_s must be between 0.1 and 60"),
        ({"sample_interval_s": 61}, "sample_interval_s must be between 0.1 and 60"),
        ({"metric_definitions": [{"Name": f"m{i}", "Regex": "x=(\\d)"} for i in range(41)]}, "at most 40"),
        ({"metric_definitions": [{"Name": "loss", "Regex": "loss=[0-9.]+"}]}, "needs a capturing group"),
        ({"metric_definitions": [{"Name": "loss", "Regex": "loss=([0-9.]+"}]}, "does not compile"),
        ({"metric_definitions": [{"Name": "loss"}]}, 'exactly the keys "Name" and "Regex"'),
        ({"metric_definitions": {"Name": "loss", "Regex": "(x)"}}, "must be a list"),
        (
            {"metric_definitions": [{"Name": "a", "Regex": "(x)"}, {"Name": "a", "Regex": "(y)"}]},
            "defined twice",
        ),
        ({"job": "../etc"}, "job name '../etc' is invalid"),
        ({"output": "http://example/x"}, "use a directory, s3://bucket/prefix"),
        ({"output": "s3:///prefix"}, "names no bucket"),
        ({"torch_profiler": {"wait": 1, "active": 0}}, "'active'] must be at least 1"),
        ({"torch_profiler": {"wiat": 1}}, "unknown keys ['wiat']"),
        ({"torch_profiler": {"warmup": -1}}, "must be a non-negative integer"),
        ({"torch_profiler": "fulll"}, "preset 'fulll' is unknown; presets: full"),
        ({"rules": ["LowGPUUtilisation"]}, "unknown rule 'LowGPUUtilisation'"),
        ({"rules": "CPUBottleneck"}, "rules must be a list"),
        ({"rules": ["CPUBottleneck"] * 21}, "at most 20"),
        ({"rules": ["CPUBottleneck", {"rule": "CPUBottleneck"}]}, "given twice"),
        ({"rules": [{"rule": "CPUBottleneck", "params": {}}]}, "must be a rule name or"),
    ],
)
def test_invalid_init_arguments_raise_value_error_and_start_nothing(
    kwargs: dict, message: str, tmp_path: Path
) -> None:
    kwargs = {"job": "ok", "output": tmp_path, **kwargs}
    with pytest.raises(ValueError) as exc:
        ph.init(**kwargs)
    assert message in str(exc.value)
    assert ph.current_run() is None and list(tmp_path.iterdir()) == []


def test_the_full_preset_turns_on_what_the_operator_kernel_and_memory_views_read() -> None:
    from profilerhub._config import parse_torch_profiler

    full = parse_torch_profiler("full")
    assert full is not None and (full.wait, full.warmup, full.active) == (1, 1, 3)
    everything = ("record_shapes", "profile_memory", "with_stack", "with_modules")
    assert full.flags == dict.fromkeys(everything, True)
    mine = parse_torch_profiler({"preset": "full", "active": 5, "with_stack": False})
    assert mine is not None and mine.active == 5 and mine.flags["with_stack"] is False
    assert mine.flags["profile_memory"] is True


def test_forty_metric_definitions_are_accepted(tmp_path: Path) -> None:
    ph.init(
        job="forty",
        output=tmp_path,
        metric_definitions=[{"Name": f"m{i}", "Regex": "x=(\\d)"} for i in range(40)],
    )
    assert ph.finish()["completed"]


def test_without_hub_url_or_output_the_run_writes_locally_and_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, sdk_log: pytest.LogCaptureFixture
) -> None:
    monkeypatch.delenv("PROFILERHUB_URL", raising=False)
    monkeypatch.chdir(tmp_path)
    ph.init(job="offline")
    summary = ph.finish()
    assert summary["location"] == str(tmp_path / "profilerhub-traces" / "offline")
    assert any("PROFILERHUB_URL is not set" in r.getMessage() for r in sdk_log.records)


def test_a_second_init_finishes_the_first_run(tmp_path: Path) -> None:
    first = ph.init(job="one", output=tmp_path)
    second = ph.init(job="two", output=tmp_path)
    assert first.finished and ph.current_run() is second
    assert (tmp_path / "one" / "_SUCCESS").exists()
