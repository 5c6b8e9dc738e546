"""Delivering spilled runs (``profilerhub._spill``) with ``profilerhub upload``'s machinery.

``deliver_entry`` sends one locked entry: to the hub job its run registered when that job still
takes files (a job completed with files missing takes them again, and is ingested anew), else to
a new job registered from ``.spill.json``; then ``complete``. The resume state
(``.profilerhub-upload.json`` in the entry) makes an interrupted delivery continue the same job
and skip the files already sent. ``deliver_in_background`` is what ``ph.init`` starts for a hub
run: one daemon thread, the entries of that hub only, never waiting for a lock.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ._config import Config
from ._log import logger
from ._spill import deliver_spills, log_delivery
from ._upload import Plan, PlannedFile, State, UploadError, _valid_name, resumed_hub_job, run_upload
from .hubclient import HubJob
from .sinks import Sink

_LAST = ("job.json", "_SUCCESS")


def plan_spill(entry: Path, meta: dict[str, Any]) -> Plan:
    """The entry's files as they are, ``job.json`` and ``_SUCCESS`` last (an empty plan: only
    ``complete`` is left to send)."""
    plan = Plan(job=_valid_name(str(meta["job"])), kind="spill")
    last: list[PlannedFile] = []
    for p in sorted(entry.rglob("*")):
        rel = p.relative_to(entry).as_posix()
        if not p.is_file() or any(part.startswith(".") for part in rel.split("/")):
            continue  # .spill.json, .lock, the resume state, a file being written
        f = PlannedFile(rel, p, p.stat().st_size)
        (last if rel in _LAST else plan.files).append(f)
    plan.files += sorted(last, key=lambda f: _LAST.index(f.path))
    return plan


def spill_sink(meta: dict[str, Any], hub_url: str | None, token: str | None) -> tuple[Sink, str]:
    """The sink an entry goes to, and its destination for the resume state.

    A hub entry goes to ``hub_url`` (default: the hub it was meant for); its registered job is
    resumed only on that same hub. An S3 entry goes to its bucket and folder.
    """
    kind, location = meta.get("sink"), str(meta.get("location") or "")
    if kind == "s3":
        from .sinks.s3 import S3Sink

        return S3Sink(location, str(meta["job"]), job_dir=meta.get("job_dir")), location
    if kind != "hub":
        raise UploadError(f"spilled run for a {kind!r} sink: nothing to deliver it to")
    from .sinks.hub import HubSink

    url = (hub_url or location).rstrip("/")
    if not url:
        raise UploadError("no hub to deliver to", "set PROFILERHUB_URL or pass --hub URL")
    sink = HubSink(
        url, token, str(meta["job"]), meta.get("metric_definitions") or None, rules=meta.get("rules") or None
    )
    job = meta.get("hub_job")
    if isinstance(job, dict) and url == location.rstrip("/"):
        sink.job = HubJob(**job)
    return sink, url


def deliver_entry(
    entry: Path,
    meta: dict[str, Any],
    *,
    hub_url: str | None = None,
    token: str | None = None,
    on_progress: Callable[[PlannedFile, bool], None] = lambda f, skipped: None,
    sleep: Callable[[float], None] = time.sleep,
) -> str:
    """Send one spilled run (its lock held by the caller); returns where it went. Raises UploadError."""
    plan = plan_spill(entry, meta)
    sink, destination = spill_sink(meta, hub_url, token)
    state = State(entry, destination, plan.job)
    resumed = resumed_hub_job(state)
    if resumed is not None and hasattr(sink, "job"):
        sink.job = resumed
    lost = int(meta.get("lost_files") or 0)
    report = {"missing_files": lost, "lost_files": lost} if lost else None
    try:
        result = run_upload(plan, sink, state, on_progress, sleep, report=report)
    finally:
        sink.close()
    return str(result["location"])


def deliver_in_background(cfg: Config) -> threading.Thread:
    """Start delivering what earlier runs spilled for ``cfg``'s hub; returns the daemon thread."""
    root = cfg.spill_dir

    def wanted(meta: dict[str, Any]) -> bool:
        return meta.get("sink") == "hub" and str(meta.get("location", "")).rstrip("/") == cfg.location

    def deliver(entry: Path, meta: dict[str, Any]) -> str:
        return deliver_entry(entry, meta, hub_url=cfg.location, token=cfg.token)

    def run() -> None:
        try:
            log_delivery(deliver_spills(root, deliver, wanted), root)
        except Exception as exc:  # never into the program: an unreadable spill folder, a bug
            logger.warning("profilerhub: delivering spilled runs from %s failed (%s)", root, exc)

    thread = threading.Thread(target=run, name="profilerhub-spill-delivery", daemon=True)
    thread.start()
    return thread


__all__ = ["deliver_entry", "deliver_in_background", "plan_spill", "spill_sink"]
