"""``profilerhub upload``: offline SDK runs and plain torch.profiler traces, to FakeHub or S3."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import boto3
import pytest

import profilerhub as ph

from .fakehub import FakeHub
from .rawfiles import files_of_dir
from .training import train


def upload(*args: str | Path) -> subprocess.CompletedProcess[str]:
    """Run the real command in a child process."""
    cmd = [sys.executable, "-m", "profilerhub.cli.main", "upload", *map(str, args)]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120)


@pytest.fixture(scope="module")
def sdk_run_dir(torch: ModuleType, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An offline SDK run with a torch trace, written once for this module."""
    out = tmp_path_factory.mktemp("offline")
    ph.init(
        job="offline-run",
        output=out,
        torch_profiler={"wait": 0, "warmup": 1, "active": 1},
        chunk_interval_s=0.2,
    )
    train(torch, 3, print_loss=False)
    ph.finish()
    return out / "offline-run"


@pytest.fixture(scope="module")
def torch_trace_dir(torch: ModuleType, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Traces written by torch.profiler without the SDK, plus a file that is not a trace."""
    root = tmp_path_factory.mktemp("plain")
    model = torch.nn.Linear(8, 8)
    with torch.profiler.profile(
        schedule=torch.profiler.schedule(wait=0, warmup=1, active=1, repeat=1),
        on_trace_ready=torch.profiler.tensorboard_trace_handler(str(root / "tb")),
    ) as prof:
        for _ in range(2):
            model(torch.randn(4, 8)).sum().backward()
            prof.step()
    with torch.profiler.profile() as prof2:
        model(torch.randn(4, 8))
    (root / "exported").mkdir()
    prof2.export_chrome_trace(str(root / "exported" / "trace.json"))
    (root / "notes.txt").write_text("not a trace")
    return root


def test_upload_sends_an_offline_sdk_run_byte_for_byte_and_completes_the_job(
    sdk_run_dir: Path, fakehub: FakeHub
) -> None:
    done = upload(sdk_run_dir)
    assert done.returncode == 0, done.stderr
    job = fakehub.job_named("offline-run")
    assert job.files == {p: b for p, b in files_of_dir(sdk_run_dir).items() if not p.startswith(".")}
    assert any(p.startswith("torch/") for p in job.files) and job.completions == 1
    assert f"job id {job.job_id}" in done.stderr

    again = upload(sdk_run_dir)
    assert again.returncode == 0 and "already uploaded" in again.stderr
    assert len(fakehub.jobs) == 1


def test_upload_sends_plain_torch_profiler_traces_under_a_job_name(
    torch_trace_dir: Path, fakehub: FakeHub
) -> None:
    done = upload(torch_trace_dir, "--job", "plain-traces", "--force")
    assert done.returncode == 0, done.stderr
    assert "skipping 1 file(s) that are not traces: notes.txt" in done.stderr
    job = fakehub.job_named("plain-traces")
    (tb,) = [p for p in (torch_trace_dir / "tb").iterdir()]
    assert gzip.decompress(job.files[f"torch/tb/{tb.name}.gz"]) == tb.read_bytes()
    assert (
        gzip.decompress(job.files["torch/exported/trace.json.gz"])
        == (torch_trace_dir / "exported/trace.json").read_bytes()
    )
    meta = json.loads(job.files["job.json"])
    assert meta["source"] == "torch.profiler" and meta["files"] == {"torch": 2}
    assert "_SUCCESS" in job.files and job.completions == 1


def test_upload_sends_a_tensorflow_log_folder_under_a_job_name(tmp_path: Path, fakehub: FakeHub) -> None:
    from tests.analysis.test_tensorflow import REAL_CPU_TRACE

    run = tmp_path / "logs/plugins/profile/2026_12_01_19_29_58"
    run.mkdir(parents=True)
    (run / "vm.trace.json.gz").write_bytes(REAL_CPU_TRACE.read_bytes())
    (run / "vm.xplane.pb").write_bytes(b"\x0a\x00")
    done = upload(tmp_path / "logs", "--job", "tf-run")
    assert done.returncode == 0, done.stderr
    note = " ".join(done.stderr.split())  # the message wraps at the terminal's width
    assert "skipping 1 file(s) that are not traces: plugins/profile/2026_12_01_19_29_58/vm.xplane.pb" in note
    job = fakehub.job_named("tf-run")
    key = "torch/plugins/profile/2026_12_01_19_29_58/vm.trace.json.gz"
    assert job.files[key] == REAL_CPU_TRACE.read_bytes() and job.completions == 1
    assert json.loads(job.files["job.json"])["source"] == "tensorflow.profiler"


def test_a_tensorflow_log_folder_with_only_xplane_profiles_says_how_to_convert_them(tmp_path: Path) -> None:
    run = tmp_path / "logs/plugins/profile/2026_12_01_19_29_58"
    run.mkdir(parents=True)
    (run / "vm.xplane.pb").write_bytes(b"\x0a\x00")  # what TF 2.5 and later write
    done = upload(tmp_path / "logs", "--job", "tf-run")
    message = " ".join(done.stderr.split())
    assert done.returncode != 0 and "TensorFlow profiles (.xplane.pb) but no trace JSON" in message
    assert "docs/analysis.md" in message


def test_an_interrupted_upload_resumes_the_same_job_without_resending(
    sdk_run_dir: Path, fakehub: FakeHub
) -> None:
    victim = sorted(p for p in files_of_dir(sdk_run_dir) if p.startswith("system/"))[-1]
    fakehub.refuse[victim] = 400
    first = upload(sdk_run_dir, "--force")
    assert first.returncode == 1
    assert (
        f"could not upload {victim}" in first.stderr
        and "run the same command again to resume" in first.stderr
    )
    job = fakehub.job_named("offline-run")
    assert job.completions == 0 and "job.json" not in job.files

    del fakehub.refuse[victim]
    second = upload(sdk_run_dir)
    assert second.returncode == 0, second.stderr
    assert len(fakehub.jobs) == 1 and job.completions == 1
    assert set(job.files) == {p for p in files_of_dir(sdk_run_dir) if not p.startswith(".")}
    assert set(job.puts.values()) == {1}  # each file sent once: the resumed run skipped what arrived


def test_upload_to_s3_writes_the_job_folder(
    sdk_run_dir: Path, s3_server: dict[str, str], s3_bucket: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AWS_ENDPOINT_URL", s3_server["endpoint_url"])
    done = upload(sdk_run_dir, "--output", f"s3://{s3_bucket}/up", "--force")
    assert done.returncode == 0, done.stderr
    s3 = boto3.client("s3", endpoint_url=s3_server["endpoint_url"], region_name=s3_server["region"])
    keys = {o["Key"] for o in s3.list_objects_v2(Bucket=s3_bucket, Prefix="up/offline-run/")["Contents"]}
    assert keys == {f"up/offline-run/{p}" for p in files_of_dir(sdk_run_dir) if not p.startswith(".")}


@pytest.mark.parametrize(
    ("args", "env", "code", "says"),
    [
        (["--job", "x"], {"PROFILERHUB_URL": ""}, 2, "set PROFILERHUB_URL or pass --hub URL"),
        ([], {"PROFILERHUB_TOKEN": "forged"}, 2, "create an API token on the hub and set PROFILERHUB_TOKEN"),
        (["--output", "ftp://x"], {}, 2, "is not an s3://bucket/prefix URL"),
        (["--job", "../bad"], {}, 2, "pass --job NAME with a valid name"),
        (["--job", "x"], {"PROFILERHUB_URL": "http://127.0.0.1:9"}, 1, "run the same command again"),
    ],
)
def test_upload_errors_say_what_to_do_next(
    sdk_run_dir: Path,
    fakehub: FakeHub,
    monkeypatch: pytest.MonkeyPatch,
    args: list[str],
    env: dict,
    code: int,
    says: str,
) -> None:
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    done = upload(sdk_run_dir, "--force", *args)
    assert done.returncode == code, done.stderr
    assert says in " ".join(done.stderr.split()) and "Traceback" not in done.stderr


def test_a_folder_without_job_json_needs_a_job_name(tmp_path: Path, fakehub: FakeHub) -> None:
    done = upload(tmp_path)
    assert done.returncode == 2
    assert "profilerhub upload DIR --job NAME" in " ".join(done.stderr.split())


def test_upload_leaves_out_symlinks_that_lead_out_of_the_folder(tmp_path: Path, fakehub: FakeHub) -> None:
    # F10: a link in the folder naming a file elsewhere (~/.ssh/id_rsa, another user's trace) is
    # not followed; a link to a file inside the folder is an ordinary file of it.
    trace = b'{"traceEvents": []}'
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "secret.json").write_bytes(b'{"traceEvents": [], "secret": 1}')
    folder = tmp_path / "traces"
    (folder / "sub").mkdir(parents=True)
    (folder / "a.json").write_bytes(trace)
    (folder / "b.json").symlink_to(outside / "secret.json")
    (folder / "sub" / "c.json").symlink_to(folder / "a.json")
    (folder / "linked").symlink_to(outside, target_is_directory=True)
    done = upload(folder, "--job", "links")
    assert done.returncode == 0, done.stderr
    job = fakehub.job_named("links")
    assert sorted(p for p in job.files if p.startswith("torch/")) == [
        "torch/a.json.gz",
        "torch/sub/c.json.gz",
    ]
    assert all(b"secret" not in gzip.decompress(body) for p, body in job.files.items() if p.endswith(".gz"))
    stderr = " ".join(done.stderr.split())
    assert "not uploading b.json: it is a symbolic link" in stderr
