"""``profilerhub upload``'s work, without the command line: plan the files, send them, resume.

Two kinds of directory are understood:

- an SDK output directory (``<output>/<job>/`` with ``job.json``): its files go up as they are;
- a directory of plain ``torch.profiler`` traces (``*.json`` / ``*.json.gz`` Chrome traces, e.g.
  from ``tensorboard_trace_handler`` or ``export_chrome_trace``) or a TensorBoard log folder of
  TensorFlow's (``plugins/profile/<run>/<host>.trace.json.gz``): each trace goes to
  ``torch/<relative path>.gz`` (gzipped on the way if it is not), with a ``job.json`` describing them.

Progress is kept in ``<dir>/.profilerhub-upload.json`` so running the same command again after an
interruption continues the same job and skips the files already sent.
"""

from __future__ import annotations

import functools
import gzip
import json
import os
import socket
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import __version__
from ._config import validate_job_name
from .hubclient import HubJob
from .sinks import Sink, SinkError

STATE_FILE = ".profilerhub-upload.json"
_TRACE_SNIFF_BYTES = 1 << 20
_RETRIES = 4


class UploadError(Exception):
    """An upload cannot go on; ``hint`` says what to do next, ``code`` is the exit status:
    2 (the default) when something must be fixed first (arguments, the folder, the token),
    1 when running the same command again may succeed (the hub or storage failed mid-way)."""

    def __init__(self, message: str, hint: str = "", code: int = 2) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint
        self.code = code


@dataclass
class PlannedFile:
    """One file to send: ``path`` in the job's layout, read from ``source`` (gzipped if ``gzip``)."""

    path: str
    source: Path | None
    size: int
    gzip: bool = False
    data: bytes | None = None  # generated content (job.json, _SUCCESS of a plain trace dir)

    def key(self) -> str:
        """What identifies this version of the file in the resume state."""
        if self.source is None:
            return f"generated:{self.size}"
        st = self.source.stat()
        return f"{st.st_size}:{st.st_mtime_ns}"

    def read(self) -> bytes:
        if self.data is not None:
            return self.data
        assert self.source is not None
        raw = self.source.read_bytes()
        return gzip.compress(raw, compresslevel=6) if self.gzip else raw


@dataclass
class Plan:
    job: str
    kind: str  # "sdk", "torch" or "spill"
    files: list[PlannedFile] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # files that are not traces (plain dirs)
    notes: list[str] = field(default_factory=list)

    @property
    def total_bytes(self) -> int:
        return sum(f.size for f in self.files)


def plan_upload(directory: Path, job: str | None) -> Plan:
    """Work out what to send from ``directory``; raises UploadError if there is nothing sensible."""
    if not directory.is_dir():
        raise UploadError(
            f"{directory} is not a directory", "pass the folder the SDK or torch.profiler wrote"
        )
    meta_path = directory / "job.json"
    if meta_path.is_file():
        return _plan_sdk_dir(directory, meta_path, job)
    return _plan_trace_dir(directory, job)


def _plan_sdk_dir(directory: Path, meta_path: Path, job: str | None) -> Plan:
    try:
        meta = json.loads(meta_path.read_text())
        name = job or str(meta["job"])
    except (ValueError, KeyError, TypeError) as exc:
        raise UploadError(
            f"{meta_path} is not an SDK job.json ({exc})", "pass --job NAME to name the job"
        ) from exc
    plan = Plan(job=_valid_name(name), kind="sdk")
    last: list[PlannedFile] = []
    for p, rel in _files_in(directory, plan):
        f = PlannedFile(rel, p, p.stat().st_size)
        (last if rel in ("job.json", "_SUCCESS") else plan.files).append(f)
    plan.files += sorted(last, key=lambda f: f.path != "job.json")  # job.json, then _SUCCESS
    if not (directory / "_SUCCESS").exists():
        plan.notes.append("the run did not finish (no _SUCCESS): uploading what it wrote")
        marker = json.dumps({"job": plan.job, "incomplete_run": True}).encode()
        plan.files.append(PlannedFile("_SUCCESS", None, len(marker), data=marker))
    return plan


def _files_in(directory: Path, plan: Plan) -> Iterator[tuple[Path, str]]:
    """The files under ``directory`` to consider, with their relative paths: hidden ones (the
    resume state, temporary files of a run still writing) left out, and so is a symbolic link
    that leads out of the folder (noted): what is uploaded is what the folder holds, never a file
    elsewhere on the machine that a link there names."""
    root = directory.resolve()
    for p in sorted(directory.rglob("*")):
        rel = p.relative_to(directory).as_posix()
        if not p.is_file() or any(part.startswith(".") for part in rel.split("/")):
            continue
        target = p.resolve()
        if not target.is_relative_to(root):
            plan.notes.append(f"not uploading {rel}: it is a symbolic link to {target}, outside {directory}")
            continue
        yield p, rel


def _trace_source(plan: Plan) -> str:
    """Who wrote the traces: TensorBoard's profile plugin keeps them under ``plugins/profile/``."""
    tensorflow = any("plugins/profile/" in f.path for f in plan.files)
    return "tensorflow.profiler" if tensorflow else "torch.profiler"


def _plan_trace_dir(directory: Path, job: str | None) -> Plan:
    if not job:
        raise UploadError(
            f"{directory} has no job.json, so it is not an SDK output folder",
            "to upload plain torch.profiler or TensorFlow traces, name the job: "
            "profilerhub upload DIR --job NAME",
        )
    plan = Plan(job=_valid_name(job), kind="torch")
    for p, rel in _files_in(directory, plan):
        if not rel.endswith((".json", ".json.gz")) or not _looks_like_chrome_trace(p):
            plan.skipped.append(rel)
            continue
        compressed = rel.endswith(".gz")
        size = p.stat().st_size
        plan.files.append(
            PlannedFile(f"torch/{rel}" + ("" if compressed else ".gz"), p, size, gzip=not compressed)
        )
    if not plan.files and any(rel.endswith(".xplane.pb") for rel in plan.skipped):
        raise UploadError(
            f"{directory} has TensorFlow profiles (.xplane.pb) but no trace JSON, which ProfilerHub reads",
            "convert each <host>.xplane.pb to <host>.trace.json.gz beside it first (docs/analysis.md, "
            "'TensorFlow traces', shows how), then upload again",
        )
    if not plan.files:
        raise UploadError(
            f"found no torch.profiler or TensorFlow traces (*.json or *.json.gz Chrome traces) "
            f"under {directory}",
            "point at the folder given to tensorboard_trace_handler or export_chrome_trace, or at a "
            "TensorBoard log folder with plugins/profile/<run>/<host>.trace.json.gz",
        )
    meta = {
        "format": "profilerhub-raw/1",
        "job": plan.job,
        "status": "Completed",
        "source": _trace_source(plan),
        "host": None,
        "sdk_version": __version__,
        "uploaded_from": {"host": socket.gethostname(), "dir": str(directory.resolve())},
        "start_ns": None,
        "end_ns": None,
        "clock": {
            "clock": "CLOCK_REALTIME",
            "torch_trace_mapping": "ns = baseTimeNanoseconds + ts_us * 1000",
        },
        "files": {"torch": len(plan.files)},
        "dropped": {"files": {}, "bytes": 0, "invalid_metrics": 0},
    }
    for path, data in (
        ("job.json", json.dumps(meta, indent=1).encode()),
        ("_SUCCESS", b'{"job": "%s"}' % plan.job.encode()),
    ):
        plan.files.append(PlannedFile(path, None, len(data), data=data))
    return plan


def _looks_like_chrome_trace(path: Path) -> bool:
    try:
        opener: Any = gzip.open if path.name.endswith(".gz") else open
        with opener(path, "rb") as fh:
            head = fh.read(_TRACE_SNIFF_BYTES)
    except (OSError, EOFError):
        return False
    start = head.lstrip()[:1]
    return start == b"[" or (start == b"{" and b'"traceEvents"' in head)


def _valid_name(name: str) -> str:
    try:
        return validate_job_name(name)
    except ValueError as exc:
        raise UploadError(str(exc), "pass --job NAME with a valid name") from exc


# -- resume state ---------------------------------------------------------------------------


class State:
    """The resume state in ``<dir>/.profilerhub-upload.json`` (best effort: a read-only dir just
    means no resume)."""

    def __init__(self, directory: Path, destination: str, job: str) -> None:
        self.path = directory / STATE_FILE
        self.data: dict[str, Any] = {"destination": destination, "job": job, "done": {}, "complete": False}
        try:
            old = json.loads(self.path.read_text())
            if old.get("destination") == destination and old.get("job") == job:
                self.data = old
        except (OSError, ValueError):
            pass

    @property
    def done(self) -> dict[str, str]:
        done: dict[str, str] = self.data.setdefault("done", {})
        return done

    def save(self) -> None:
        try:
            tmp = self.path.with_name(self.path.name + ".tmp")
            tmp.write_text(json.dumps(self.data, indent=1))
            os.replace(tmp, self.path)
        except OSError:
            pass


def resumed_hub_job(state: State) -> HubJob | None:
    h = state.data.get("hub_job")
    return HubJob(**h) if isinstance(h, dict) else None


# -- sending --------------------------------------------------------------------------------


def run_upload(
    plan: Plan,
    sink: Sink,
    state: State,
    on_progress: Callable[[PlannedFile, bool], None],
    sleep: Callable[[float], None] = time.sleep,
    report: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Send ``plan`` through ``sink`` (resuming from ``state``), then complete the job (with
    ``report``: what is missing for good, see ``Sink.complete``).

    ``on_progress(file, skipped)`` is called after each file.  Raises UploadError when a file
    cannot be sent after retries; the state is saved so the same command resumes.
    """
    _retry(lambda: sink.open(), "register the job", sleep)
    if state.data.get("location") != sink.location:
        state.done.clear()  # a new job (or folder): everything goes again
    state.data["location"] = sink.location
    job = getattr(sink, "job", None)
    if isinstance(job, HubJob):
        state.data["hub_job"] = job.__dict__
    state.data["complete"] = False
    state.save()
    sent = skipped = 0
    for f in plan.files:
        if state.done.get(f.path) == f.key():
            skipped += 1
            on_progress(f, True)
            continue
        data = f.read()
        _retry(functools.partial(sink.put, f.path, data), f"upload {f.path}", sleep, state)
        state.done[f.path] = f.key()
        state.save()
        sent += 1
        on_progress(f, False)
    _retry(functools.partial(sink.complete, report), "complete the job", sleep, state)
    state.data["complete"] = True
    state.save()
    return {"job": plan.job, "location": sink.location, "sent": sent, "skipped": skipped, "info": sink.info()}


def _retry(
    fn: Callable[[], None], what: str, sleep: Callable[[float], None], state: State | None = None
) -> None:
    for attempt in range(_RETRIES):
        try:
            fn()
            return
        except SinkError as exc:
            if state is not None:
                state.save()
            if exc.fatal:
                raise UploadError(f"could not {what}: {exc.message}", _hint_for(exc.message)) from exc
            if not exc.retryable or attempt == _RETRIES - 1:
                raise UploadError(
                    f"could not {what}: {exc.message}",
                    "run the same command again to resume: files already sent are skipped",
                    code=1,
                ) from exc
            sleep(0.5 * 2**attempt)


def _hint_for(message: str) -> str:
    if "token" in message or "401" in message:
        return "create an API token on the hub and set PROFILERHUB_TOKEN (or pass --token)"
    if "403" in message:
        return "your token may not create jobs for this user; ask a domain admin"
    if "S3" in message:
        return "check the bucket name, AWS credentials and PROFILERHUB_S3_ENDPOINT_URL / AWS_ENDPOINT_URL"
    return "check the hub URL (PROFILERHUB_URL or --hub)"
