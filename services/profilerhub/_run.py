"""A run: what ``ph.init`` starts and ``ph.finish`` ends.

It owns the record buffers (lock-free ``deque`` appends from any thread), the collector thread
(samples system metrics and cuts the buffers into chunk files every ``chunk_interval_s``), the
stdout/stderr tees (metric definitions, and the lines the script prints: its log, kept up to
``MAX_LOG_BYTES`` per run, the rest counted), the optional torch profiler and the upload queue.
"""

from __future__ import annotations

import collections
import contextlib
import gzip
import json
import logging
import math
import os
import socket
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

from ._clock import clock_info, now_ns
from ._config import Config
from ._jobjson import int_env, job_json
from ._log import log_once, logger, say
from ._spill import Spill, upload_command
from ._stdio import TeeStream
from ._tensorboard import TensorBoardFiles
from ._uploader import Uploader
from .sinks import Sink, make_sink
from .sinks.base import USER_STOP

CHUNK_KINDS = ("system", "annotations", "metrics", "tensors", "logs")
#: Text of printed lines a run keeps for its log (``PROFILERHUB_LOG_MAX_BYTES``); the rest is counted.
MAX_LOG_BYTES = 8 << 20
#: Records that make a chunk early, so no single chunk takes long to write out.
MAX_CHUNK_RECORDS = 50_000
CHUNK_LIMITS = {"tensors": MAX_CHUNK_RECORDS // 100}  # a record per step and watch: larger each
_CHECK_S = 0.5

#: An annotation or step as recorded: (kind, name, start_ns, end_ns, thread id, depth, step).
AnnotationRecord = tuple[str, str, int, int, int, int, "int | None"]


def _jsonl_gz(records: list[dict[str, Any]]) -> bytes:
    text = "\n".join(json.dumps(r, separators=(",", ":")) for r in records) + "\n"
    return gzip.compress(text.encode(), compresslevel=5)


def _built(items: list[Any]) -> list[dict[str, Any]]:
    """The tensors buffer's records, those still to build built here (a failing one is logged
    and left out: the collector goes on)."""
    out = []
    for item in items:
        if not callable(item):
            out.append(item)
            continue
        try:
            out.append(item())
        except Exception as exc:
            log_once("watch-record", logging.WARNING, "profilerhub: watch: a step's record lost (%s)", exc)
    return out


class Run:
    """One profiled run of a training script, writing to one sink."""

    def __init__(self, cfg: Config, sink: Sink | None = None) -> None:
        self.cfg = cfg
        self.pid = os.getpid()
        self.enabled = True
        self.finished = False
        self.start_ns = now_ns()
        self.start_clock = clock_info()
        self.current_step: int | None = None
        self.annotations: collections.deque[AnnotationRecord] = collections.deque()
        self.metrics: collections.deque[dict[str, Any]] = collections.deque()
        self.system: collections.deque[dict[str, Any]] = collections.deque()
        # ph.watch's records (one per mode, step and watch: docs/debugging.md) and its state
        # A record, or a callable that builds one (``_watch_record.StepValues``): the collector
        # calls it when it cuts the chunk, off the training thread.
        self.tensors: collections.deque[dict[str, Any] | Callable[[], dict[str, Any]]] = collections.deque()
        self.watchers: list[Any] = []
        self.mode = "train"
        self.mode_steps: dict[str, int] = {}
        self.local_stop: str | None = None
        self._full_seq = 0
        self._rank: int | None = None
        # the printed lines (the job's log), up to max_log_bytes, in one folder per rank
        self.logs: collections.deque[dict[str, Any]] = collections.deque()
        self.log_counts = {"lines": 0, "bytes": 0, "dropped_lines": 0, "dropped_bytes": 0}
        limit = int_env("PROFILERHUB_LOG_MAX_BYTES")
        self.max_log_bytes = MAX_LOG_BYTES if limit is None or limit < 0 else limit
        self.log_rank = int_env("RANK") or 0  # fixed at init: the log stream's name must not move
        self.thread_names: dict[int, str] = {}
        self.invalid_metrics = 0
        self.chunks = dict.fromkeys(CHUNK_KINDS, 0)
        self.torch_traces = 0
        self.tensorboard = TensorBoardFiles(cfg.tensorboard_dir)
        self.sink = sink or make_sink(
            cfg.sink,
            cfg.location,
            cfg.job,
            cfg.token,
            [d.as_dict() for d in cfg.metric_definitions] or None,
            list(cfg.rules) or None,
            stop_on=list(cfg.stop_on) or None,
        )
        self.spill = self._make_spill()
        self.uploader = Uploader(self.sink, max_pending_bytes=cfg.max_pending_bytes, spill=self.spill)
        self.complete_sent = False
        self.delivery: Any = None  # the thread delivering earlier runs' spills (hub runs)
        self.torch_profiler: Any = None
        self.capture: Any = None  # the capture the hub asked for, while it runs (a TorchProfiler)
        self.capture_left = 0
        self.captures_done: set[str] = set()
        self._tees: list[TeeStream] = []
        self._stop = threading.Event()
        self._collector: threading.Thread | None = None
        self._finish_lock = threading.Lock()
        self._summary: dict[str, Any] | None = None
        self.stop_raised = False

    # -- lifecycle ----------------------------------------------------------------------------

    def _make_spill(self) -> Spill | None:
        """Where undelivered files go: remote sinks only (a local sink that fails is the disk)."""
        cfg = self.cfg
        if cfg.sink == "local" or cfg.spill_max_bytes <= 0:
            return None
        meta = {
            "format": "profilerhub-spill/1",
            "job": cfg.job,
            "sink": cfg.sink,
            "location": cfg.location,
            "metric_definitions": [d.as_dict() for d in cfg.metric_definitions],
            "rules": list(cfg.rules),
        }
        return Spill(cfg.spill_dir, cfg.spill_max_bytes, meta)

    def start(self) -> None:
        self.uploader.start()
        if self.cfg.sink == "hub" and self.cfg.token and self.cfg.spill_max_bytes > 0:
            from ._delivery import deliver_in_background

            self.delivery = deliver_in_background(self.cfg)
        self.uploader.submit("job.json", job_json(self, status="InProgress"))
        self._collector = threading.Thread(target=self._collect, name="profilerhub-collector", daemon=True)
        self._collector.start()
        if self.cfg.capture_output:
            self._install_tees()
        if self.cfg.torch_profiler is not None:
            self._start_torch_profiler()

    def _start_torch_profiler(self) -> None:
        try:
            from ._torchprof import TorchProfiler

            self.torch_profiler = TorchProfiler(self.cfg.torch_profiler, self._emit_torch_trace)  # type: ignore[arg-type]
            self.torch_profiler.start()
        except ImportError:
            log_once(
                "no-torch", logging.WARNING, "profilerhub: torch_profiler= given but torch is not installed"
            )
            self.torch_profiler = None
        except Exception as exc:
            log_once(
                "torch-start", logging.WARNING, "profilerhub: could not start the torch profiler (%s)", exc
            )
            self.torch_profiler = None

    def start_capture(self, number: int) -> None:
        """Entering step ``number``: start the capture the hub asked for (``X-ProfilerHub-Capture``)
        once its ``start_step`` is reached (none given: now), each request once, one at a time.
        Nothing here raises: a capture that cannot run is logged."""
        wanted = self.sink.capture_request
        if wanted is None or self.capture is not None or wanted["id"] in self.captures_done:
            return
        if wanted["start_step"] is not None and number < wanted["start_step"]:
            return
        self.captures_done.add(wanted["id"])
        if self.torch_profiler is not None or "torch" not in sys.modules:
            why = "it runs the PyTorch profiler on its own schedule" if self.torch_profiler else "no torch"
            logger.warning("profilerhub: job %s: capture %s not run: %s", self.cfg.job, wanted["id"], why)
            return
        try:
            from ._config import TorchProfilerConfig
            from ._torchprof import TorchProfiler

            flags = {"record_shapes": bool(wanted["record_shapes"])}
            cfg = TorchProfilerConfig(
                wait=0, warmup=0, active=wanted["steps"], repeat=1, skip_first=0, flags=flags
            )
            capture = TorchProfiler(cfg, self._emit_torch_trace, label=f".capture-{wanted['id']}")
            capture.start()
        except Exception as exc:
            logger.warning(
                "profilerhub: job %s: capture %s could not start (%s)", self.cfg.job, wanted["id"], exc
            )
            return
        say("profilerhub: job %s: capturing %d step(s) from step %d", self.cfg.job, wanted["steps"], number)
        self.capture, self.capture_left = capture, wanted["steps"]

    def step_capture(self) -> None:
        """A step ended: advance the capture; after its last step its trace is out, and it stops."""
        capture = self.capture
        if capture is None:
            return
        try:
            capture.step()
            self.capture_left -= 1
            if self.capture_left <= 0:
                self.capture = None
                capture.stop()
        except Exception as exc:
            self.capture = None
            log_once("capture-step", logging.WARNING, "profilerhub: a capture failed (%s)", exc)

    def _emit_torch_trace(self, path: str, data: bytes) -> None:
        self.torch_traces += 1
        self.uploader.submit(path, data)

    def _install_tees(self) -> None:
        for name in ("stdout", "stderr"):
            stream = getattr(sys, name)
            if stream is None:
                continue
            tee = TeeStream(stream, name, self.cfg.metric_definitions, self._on_output_metric, self._on_line)
            setattr(sys, name, tee)
            self._tees.append(tee)

    def _remove_tees(self) -> None:
        for tee in self._tees:
            tee.active = False
            name = "stdout" if tee._source == "stdout" else "stderr"
            if getattr(sys, name) is tee:
                setattr(sys, name, tee.wrapped)
        self._tees = []

    def disable_in_forked_child(self) -> None:
        """Called in a forked child: record nothing, upload nothing, leave the parent's job alone."""
        self.enabled = False
        self.finished = True
        for tee in self._tees:
            tee.active = False

    def finish(self, timeout: float | None = None) -> dict[str, Any]:
        """Stop recording, flush everything within ``timeout`` seconds, complete the job.

        Returns a summary (location, files written, dropped counts); never raises.
        """
        with self._finish_lock:
            if self._summary is not None:
                return self._summary
            if os.getpid() != self.pid:
                return {"job": self.cfg.job, "skipped": "forked child"}
            try:
                self._summary = self._finish(self.cfg.flush_timeout_s if timeout is None else timeout)
            except Exception as exc:  # finish runs at exit too: never raise from it
                logger.exception("profilerhub: error while finishing the run: %s", exc)
                self._summary = {"job": self.cfg.job, "error": str(exc)}
            return self._summary

    def _finish(self, timeout: float) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        self.enabled = False
        self.finished = True
        self._remove_tees()
        if self.capture is not None:  # the run ended mid-capture: what it recorded is exported
            capture, self.capture = self.capture, None
            with contextlib.suppress(Exception):
                capture.stop()
        if self.torch_profiler is not None:
            try:
                self.torch_profiler.stop()
            except Exception as exc:
                log_once(
                    "torch-stop", logging.WARNING, "profilerhub: could not stop the torch profiler (%s)", exc
                )
            never = self.torch_profiler.never_active()
            if never:
                logger.warning("profilerhub: job %s: %s", self.cfg.job, never)
        try:
            self.flush_watchers(final=True)
        except Exception as exc:
            log_once("watch-finish", logging.WARNING, "profilerhub: watch: last step lost (%s)", exc)
        self._stop.set()
        if self._collector is not None:
            self._collector.join(timeout=max(1.0, min(5.0, timeout)))
        end_ns = now_ns()
        # Give the data 80% of the time; the closing files (job.json, _SUCCESS, complete) the rest.
        if not self.uploader.drain(max(0.0, deadline - time.monotonic()) * 0.8):
            self.uploader.abandon_pending()
        self.uploader.submit("job.json", job_json(self, status="Completed", end_ns=end_ns))
        self.uploader.submit("_SUCCESS", json.dumps({"job": self.cfg.job, "end_ns": end_ns}).encode())
        self.uploader.submit_call(self._complete)
        self.uploader.close(max(0.0, deadline - time.monotonic()))
        if self.delivery is not None:  # earlier runs' spills: what is left of the deadline, no more
            self.delivery.join(max(0.0, deadline - time.monotonic()))
        dropped, spilled = self.uploader.dropped, self.uploader.spilled
        spill_dir = self._close_spill()
        summary = {
            "job": self.cfg.job,
            "location": self.sink.location,
            "sink": self.sink.kind,
            "uploaded_files": self.uploader.uploaded_files,
            "uploaded_bytes": self.uploader.uploaded_bytes,
            "spilled_files": dict(spilled.files),
            "spilled_bytes": spilled.bytes,
            "spill_dir": spill_dir,
            "dropped_files": dict(dropped.files),
            "dropped_bytes": dropped.bytes,
            "invalid_metrics": self.invalid_metrics,
            "complete_sent": self.complete_sent,
            "completed": self.complete_sent and dropped.total() == 0 and spilled.total() == 0,
        }
        if spill_dir is not None:
            logger.warning(
                "profilerhub: job %s finished; %d file(s) (%d bytes) not delivered to %s%s, kept in %s; "
                "they are delivered by the next ph.init to this hub, or now with: %s",
                self.cfg.job,
                spilled.total(),
                spilled.bytes,
                self.sink.location,
                " (the job is not completed yet)"
                if not self.complete_sent and getattr(self.sink, "job", None) is not None
                else "",
                spill_dir,
                upload_command(self.cfg.spill_dir, self.cfg.location if self.cfg.sink == "hub" else None),
            )
        if dropped.total():
            logger.warning(
                "profilerhub: job %s finished; %d file(s) (%d bytes) could not be written to %s and are "
                "lost: %s",
                self.cfg.job,
                dropped.total(),
                dropped.bytes,
                self.sink.location,
                dict(dropped.files),
            )
        elif spill_dir is None:
            look = self.sink.where_to_look() if self.complete_sent else ""
            summary["where_to_look"] = look
            say(
                "profilerhub: job %s finished; %d file(s) in %s%s",
                self.cfg.job,
                self.uploader.uploaded_files,
                self.sink.location,
                f"; {look}" if look else "",
            )
        return summary

    def stop_requested(self) -> str | None:
        """Why the run is asked to stop, the first time it is asked: ``USER_STOP`` (a person's
        stop, every run), a rule's name (runs that opted in with ``stop_on``), or ``ExplodingTensor``
        when ``ph.watch``'s own reductions saw NaN/Inf (``on_tensor_record``, opted-in runs)."""
        rule = self.local_stop or self.sink.stop_request
        if rule is None or self.stop_raised or (rule != USER_STOP and not self.cfg.stop_on):
            return None
        self.stop_raised = True
        return rule

    # -- ph.watch ------------------------------------------------------------------------------

    def rank(self) -> int:
        """This process's rank (torch.distributed's once initialised, else ``$RANK``, else 0)."""
        torch = sys.modules.get("torch")
        if torch is None:
            return int_env("RANK") or 0
        from ._watch_host import rank_of

        return rank_of(torch)

    def next_full_tensor(self) -> int:
        self._full_seq += 1
        return self._full_seq

    def flush_watchers(self, *, final: bool = False) -> None:
        for w in list(self.watchers):
            w.flush(final=final)

    def on_tensor_record(self, record: dict[str, Any]) -> None:
        """The SDK-side ExplodingTensor: a watched tensor with NaN (or Inf, unless ``only_nan``)
        stops an opted-in run at its next ``ph.step``, without waiting for the hub's scan."""
        if self.local_stop is not None or "ExplodingTensor" not in self.cfg.stop_on:
            return
        params: dict[str, Any] = next(
            (r["parameters"] for r in self.cfg.rules if r["rule"] == "ExplodingTensor"), {}
        )
        only_nan = bool(params.get("only_nan", False))
        wanted = params.get("collection_names")
        regex = params.get("tensor_regex")
        import re

        for name, stats in zip(record["names"], record["stats"], strict=True):
            if wanted and name.split("/", 1)[0] not in wanted:
                continue
            if regex and not re.search(str(regex), name):
                continue
            if stats[6] or (not only_nan and stats[7]):  # nan, inf counts
                self.local_stop = "ExplodingTensor"
                logger.warning(
                    "profilerhub: job %s: %s has %s NaN and %s Inf values at %s step %s (ExplodingTensor)",
                    self.cfg.job,
                    name,
                    stats[6],
                    stats[7],
                    record["mode"],
                    record["step"],
                )
                return

    def _complete(self) -> None:
        """``complete`` the job, telling the hub how many files it will not get now and why."""
        self.sink.complete(self._missing_report())
        self.complete_sent = True

    def _missing_report(self) -> dict[str, Any] | None:
        spilled, dropped = self.uploader.spilled, self.uploader.dropped
        missing = spilled.total() + dropped.total()
        if not missing:
            return None
        report: dict[str, Any] = {"missing_files": missing, "lost_files": dropped.total()}
        if spilled.total() and self.spill is not None:
            report["spill"] = {
                "host": socket.gethostname(),
                "dir": str(self.spill.dir),
                "files": spilled.total(),
                "command": upload_command(self.cfg.spill_dir, self.cfg.location),
            }
        return report

    def _close_spill(self) -> str | None:
        """Describe the spill entry for its delivery and release it; its folder, if there is one.

        A hub job that was registered but not completed (the hub went down near the end) gets an
        entry even with no file in it, so a later delivery sends the ``complete``.
        """
        spill = self.spill
        if spill is None:
            return None
        job = getattr(self.sink, "job", None)
        fields: dict[str, Any] = {
            "lost_files": self.uploader.dropped.total(),
            "complete_sent": self.complete_sent,
            "destination": self.sink.info(),
        }
        if job is not None and hasattr(job, "job_id"):
            fields["hub_job"] = dict(job.__dict__)
        if self.cfg.sink == "s3" and self.uploader.opened:
            fields["job_dir"] = getattr(self.sink, "job_dir", None)
        if spill.dir is None and job is not None and not self.complete_sent:
            spill.ensure()
        spill.update(**fields)
        spill.close()
        return str(spill.dir) if spill.dir is not None else None

    # -- records ------------------------------------------------------------------------------

    def log_metric(
        self, name: str, value: Any, step: int | None, source: str = "log_metric", tensorboard: bool = False
    ) -> None:
        if not isinstance(name, str) or not 1 <= len(name) <= 255:
            self._invalid_metric(f"metric name must be a 1-255 character string, got {name!r}")
            return
        try:
            number = float(value)
        except (TypeError, ValueError):
            self._invalid_metric(f"metric {name!r}: value {value!r} is not a number")
            return
        rec: dict[str, Any] = {
            "name": name,
            "value": number if math.isfinite(number) else None,
            "step": self.current_step if step is None else int(step),
            "ts_ns": now_ns(),
            "source": source,
        }
        if rec["value"] is None:
            rec["nonfinite"] = str(number)  # "nan", "inf", "-inf": JSON has no such numbers
        self.metrics.append(rec)
        if tensorboard:
            self.tensorboard.add(name, number, rec["step"])

    def _invalid_metric(self, why: str) -> None:
        self.invalid_metrics += 1
        log_once(
            "invalid-metric", logging.WARNING, "profilerhub: %s (ignored; further ones are counted)", why
        )

    def _on_output_metric(self, name: str, text: str, source: str) -> None:
        if self.enabled:
            self.log_metric(name, text, None, source)

    def _on_line(self, source: str, line: str) -> None:
        """Keep one printed line for the job's log while under ``max_log_bytes``; count it either way."""
        if not self.enabled:
            return
        size = len(line.encode("utf-8", "replace")) + 1
        counts = self.log_counts
        if counts["bytes"] + size > self.max_log_bytes:
            counts["dropped_lines"] += 1
            counts["dropped_bytes"] += size
            return
        counts["lines"] += 1
        counts["bytes"] += size
        self.logs.append({"ts_ns": time.time_ns(), "source": source, "message": line})

    # -- the collector thread -----------------------------------------------------------------

    def _collect(self) -> None:
        sampler = None
        try:
            from ._system import SystemSampler

            sampler = SystemSampler()
        except Exception as exc:
            log_once("sampler", logging.WARNING, "profilerhub: no system metrics (%s)", exc)
        interval, chunk_every = self.cfg.sample_interval_s, self.cfg.chunk_interval_s
        now = time.monotonic()
        next_sample, next_chunk = now + interval, now + chunk_every
        while not self._stop.wait(max(0.0, min(next_sample, next_chunk, now + _CHECK_S) - time.monotonic())):
            now = time.monotonic()
            if sampler is not None and now >= next_sample:
                self._sample(sampler)
                next_sample = max(next_sample + interval, now + interval / 2)
            # A very busy loop (100k+ annotations between chunks) gets smaller chunks, sooner.
            if now >= next_chunk or any(self._over_limit(kind) for kind in CHUNK_KINDS):
                self.flush_chunks(hold=True)
                next_chunk = now + chunk_every
        if sampler is not None:
            self._sample(sampler)
            sampler.close()
        self.flush_chunks()

    def _sample(self, sampler: Any) -> None:
        try:
            self.system.append(sampler.sample())
        except Exception as exc:
            log_once("sample", logging.WARNING, "profilerhub: a system-metrics sample failed (%s)", exc)

    def _over_limit(self, kind: str) -> bool:
        return len(getattr(self, kind)) > CHUNK_LIMITS.get(kind, MAX_CHUNK_RECORDS)

    def flush_chunks(self, *, hold: bool = False) -> None:
        """Cut every buffer into its next chunk file (``<kind>/<seq>.jsonl.gz``) and queue it.

        ``hold`` (the collector's periodic cut): a kind whose previous chunk the sink has not
        taken yet (``Uploader.holding``) waits for the next cut, unless its buffer is over its
        limit. Without it, a hub slower than one file per chunk interval per kind fell ever
        further behind, and ``finish`` gave up (spilled) the run's last seconds."""
        for kind in CHUNK_KINDS:
            folder = f"logs/rank{self.log_rank}" if kind == "logs" else kind  # one log stream per rank
            if hold and not self._over_limit(kind) and self.uploader.holding(folder):
                continue
            records = self._drain(kind)
            if records:
                self.chunks[kind] += 1
                self.uploader.submit(f"{folder}/{self.chunks[kind]:06d}.jsonl.gz", _jsonl_gz(records))
        for path, data in self.tensorboard.files(final=self._stop.is_set()):
            self.uploader.submit(path, data)

    def _drain(self, kind: str) -> list[dict[str, Any]]:
        buf: collections.deque[Any] = getattr(self, kind)
        out: list[Any] = []
        for _ in range(len(buf)):  # popleft is atomic; appends from other threads go on meanwhile
            out.append(buf.popleft())
        if kind == "tensors":
            return _built(out)
        if kind == "annotations":
            names = self.thread_names
            return [
                {
                    "kind": k,
                    "name": n,
                    "start_ns": s,
                    "end_ns": e,
                    "thread": t,
                    "thread_name": names.get(t),
                    "depth": d,
                    "step": st,
                }
                for (k, n, s, e, t, d, st) in out
            ]
        return out
