"""The bounded background upload queue between a run and its sink.

One daemon thread takes files in order and hands them to the sink.  Nothing here raises into the
caller: ``submit`` never blocks on the network, sink errors are logged once per kind, transient
ones are retried with the one retry policy of the hub's client (``hubhttp.RETRY``, its patient
delays: the file stays at the head of the queue, so order is kept and a hub that comes back gets
everything that was buffered), and ``close`` gives up at its deadline.

A file that will not reach the sink (the queue is full, the sink is dead after a bad token, the
sink refused it, ``close`` ran out of time) is *given up*: handed to the run's spill
(``profilerhub._spill``) when there is one and it fits, and counted in ``spilled``; otherwise
counted in ``dropped`` (lost). A full queue spills in the caller's thread; everything else is
spilled by the upload thread or by ``close``.

Fork safety: the thread does not exist in a forked child, and the run that owns this queue
disables itself there (``profilerhub._api``), so a DataLoader worker never uploads anything.
"""

from __future__ import annotations

import collections
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from ._log import log_once, logger
from ._spill import Spill
from .hubhttp import RETRY
from .sinks.base import Sink, SinkError

#: The thread ``close`` leaves the closing calls (``complete``) to when its time is up.
CLOSING_THREAD = "profilerhub-closing"
#: A queue entry: a file ``(path, data)``, or a call (``complete``) that runs after every file before it.
_Item = tuple[str, bytes] | Callable[[], None]


@dataclass
class DropCounts:
    """Files (by top-level folder: ``system``, ``annotations``, ``torch`` ...) and bytes given up."""

    files: dict[str, int] = field(default_factory=dict)
    bytes: int = 0

    def add(self, path: str, size: int) -> None:
        kind = path.split("/", 1)[0] if "/" in path else path
        self.files[kind] = self.files.get(kind, 0) + 1
        self.bytes += size

    def total(self) -> int:
        return sum(self.files.values())


class Uploader:
    """Hands files to ``sink`` from a daemon thread; bounded by ``max_pending_bytes``."""

    def __init__(
        self,
        sink: Sink,
        *,
        max_pending_bytes: int = 256 << 20,
        max_pending_files: int = 10_000,
        spill: Spill | None = None,
    ) -> None:
        self.sink = sink
        self.max_pending_bytes = max_pending_bytes
        self.max_pending_files = max_pending_files
        self.spill = spill
        self.dropped = DropCounts()  # lost: neither delivered nor spilled
        self.spilled = DropCounts()
        self._spilled_paths: set[str] = set()
        self.uploaded_files = 0
        self.uploaded_bytes = 0
        self.opened = False
        self.dead = False  # a fatal error: the sink is never tried again
        self._queue: collections.deque[_Item] = collections.deque()
        self._pending_bytes = 0
        self._cond = threading.Condition()
        self._busy = False  # the worker holds an item that is not in the queue any more
        self._retrying = False  # the first item failed transiently and waits for its next try
        self._stop_at: float | None = None  # monotonic deadline set by close()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="profilerhub-uploader", daemon=True)
        self._thread.start()

    def submit(self, path: str, data: bytes) -> bool:
        """Queue one file; False (and counted as dropped) if the queue is full or the sink is dead."""
        with self._cond:
            full = self._stop_at is not None or (
                self._pending_bytes + len(data) > self.max_pending_bytes
                or len(self._queue) >= self.max_pending_files
            )
            if not full:
                self._queue.append((path, data))
                self._pending_bytes += len(data)
                self._cond.notify()
                return True
            if self._stop_at is None:
                log_once(
                    "queue-full",
                    logging.WARNING,
                    "profilerhub: upload queue full (%d MiB pending, %s unreachable?); %s new files",
                    self._pending_bytes >> 20,
                    self.sink.kind,
                    "spilling" if self.spill is not None else "dropping and counting",
                )
        self.give_up(path, data)
        return False

    def holding(self, folder: str) -> bool:
        """Whether a file under ``folder/`` is still queued (or in flight) while the sink takes
        files. The collector then keeps that kind's records for its next chunk: a slow sink gets
        fewer, larger files instead of a queue that grows with every chunk, so what ``finish``
        has to drain stays about one file per kind. False while the sink fails (retrying or
        dead): files are then queued and spilled as before."""
        prefix = folder + "/"
        with self._cond:
            if self._retrying or self.dead:
                return False
            return any(isinstance(item, tuple) and item[0].startswith(prefix) for item in self._queue)

    def give_up(self, path: str, data: bytes) -> None:
        """``path`` will not reach the sink: spill it when it fits, else count it as dropped."""
        if self.spill is not None and self.spill.put(path, data):
            with self._cond:
                if path not in self._spilled_paths:  # job.json is given up twice: one file kept
                    self._spilled_paths.add(path)
                    self.spilled.add(path, len(data))
        else:
            with self._cond:
                self.dropped.add(path, len(data))

    def submit_call(self, fn: Callable[[], None]) -> None:
        """Queue ``fn`` (e.g. ``sink.complete``) to run after every file queued before it (not run
        once the sink is dead)."""
        with self._cond:
            self._queue.append(fn)
            self._cond.notify()

    def drain(self, timeout: float) -> bool:
        """Wait until everything queued so far is done (or given up); False at the timeout."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while self._queue or self._busy:
                left = deadline - time.monotonic()
                if left <= 0 or self._thread is None or not self._thread.is_alive():
                    return False
                self._cond.wait(min(left, 0.05))
            return True

    def abandon_pending(self) -> None:
        """Give up (spill or count) every file still queued; calls queued are kept."""
        with self._cond:
            files = [item for item in self._queue if isinstance(item, tuple)]
            self._queue = collections.deque(item for item in self._queue if not isinstance(item, tuple))
            self._pending_bytes = 0
        for path, data in files:
            self.give_up(path, data)

    def close(self, timeout: float) -> None:
        """Finish what is queued within ``timeout`` seconds, then stop; files left are given up.

        Files get the first half of ``timeout``. When one is still being retried then (storage
        answering 503 to every file), the files left are given up (spilled or counted) and the
        calls queued behind them (``complete``) run once anyway in the second half: the sink
        answers, so it hears that the run is over and how much it did not get. A call still
        running when the time is up is left to its thread (the sink's own timeouts bound it).
        """
        deadline = time.monotonic() + timeout
        drained = self.drain(timeout / 2)
        with self._cond:
            self._stop_at = time.monotonic()
            self._cond.notify_all()
        if self._thread is not None:
            # A request in flight is bounded by the sink's own timeouts; do not wait for it forever.
            self._thread.join(timeout=1.0)
        self.abandon_pending()
        if not drained:
            self._run_calls_left(deadline)
        self.sink.close()

    def _run_calls_left(self, deadline: float) -> None:
        """Run the calls still queued (once each, in order) until ``deadline``, unless the sink is dead."""
        with self._cond:
            calls = [item for item in self._queue if not isinstance(item, tuple)]
            self._queue.clear()
        if self.dead or not self.opened or not calls:
            return

        def run() -> None:
            for call in calls:
                try:
                    call()
                except Exception as exc:  # the run's closing account says the job is not completed
                    logger.debug("profilerhub: closing call failed: %s", exc)
                    return

        thread = threading.Thread(target=run, name=CLOSING_THREAD, daemon=True)
        thread.start()
        thread.join(max(0.0, deadline - time.monotonic()))

    # -- the worker thread --------------------------------------------------------------------

    def _run(self) -> None:
        failures = 0  # in a row, of the item at the head of the queue
        while True:
            with self._cond:
                while not self._queue and self._stop_at is None:
                    self._cond.wait()
                if self._stop_at is not None:
                    return
                item = self._queue[0]
                self._busy = True
            try:
                ok = self._do(item)
            except Exception as exc:  # a bug in a sink must not kill the thread silently
                if self._stop_at is not None:
                    return  # close() gave up on this request and closed the sink under it
                logger.exception("profilerhub: unexpected error in the uploader: %s", exc)
                ok = True
                if isinstance(item, tuple):
                    self.give_up(*item)
            with self._cond:
                self._busy = False
                self._retrying = not ok
                if ok:
                    if self._queue and self._queue[0] is item:
                        self._queue.popleft()
                        if isinstance(item, tuple):
                            self._pending_bytes -= len(item[1])
                    failures = 0
                    self._cond.notify_all()
                    continue
                self._cond.notify_all()
                # Transient failure: wait (close() cuts it short) and try the same item again.
                failures += 1
                retry_at = time.monotonic() + RETRY.delay(failures, patient=True)
                while self._stop_at is None and (left := retry_at - time.monotonic()) > 0:
                    self._cond.wait(left)

    def _do(self, item: _Item) -> bool:
        """Run one item; True when it is done with (uploaded or given up), False to retry it."""
        if self.dead:  # nothing reaches the sink any more: keep the files, skip the calls
            if isinstance(item, tuple):
                self.give_up(*item)
            return True
        try:
            if not self.opened:
                self.sink.open()
                self.opened = True
                logger.info("profilerhub: writing job to %s", self.sink.location)
            if isinstance(item, tuple):
                path, data = item
                self.sink.put(path, data)
                self.uploaded_files += 1
                self.uploaded_bytes += len(data)
            else:
                item()
            return True
        except SinkError as exc:
            return self._failed(item, exc)

    def _failed(self, item: _Item, exc: SinkError) -> bool:
        if exc.retryable:
            log_once(
                f"retry-{self.sink.kind}",
                logging.WARNING,
                "profilerhub: %s; buffering and retrying in the background (training goes on)",
                exc.message,
            )
            return False
        if exc.fatal or not self.opened:
            log_once(
                f"fatal-{self.sink.kind}",
                logging.ERROR,
                "profilerhub: %s; nothing more will be sent to %s, %s",
                exc.message,
                self.sink.kind,
                "the files are spilled to local disk"
                if self.spill is not None
                else "dropped data is counted",
            )
            with self._cond:
                self.dead = True
        else:
            log_once(
                f"refused-{self.sink.kind}", logging.WARNING, "profilerhub: %s; file given up", exc.message
            )
        if isinstance(item, tuple):
            self.give_up(*item)
        return True
