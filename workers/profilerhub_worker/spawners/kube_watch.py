"""One list-then-watch of an installation's app Deployments per worker process, so that polling
running apps costs no API read per app.

``KubernetesSpawner.poll`` asks ``deployment_watch(opts).deployment(name)`` first.  The watch is a
thread of its own that runs the loop an informer runs (and the start's wait for one pod, in
``kubernetes``)::

    list the Deployments of this release's apps (one label selector) -> the cache, a resourceVersion
    watch from that version, APP_WATCH_SECONDS at most              -> each ADDED/MODIFIED/DELETED applied
    the watch ends, fails, or answers 410 Gone                       -> list again, watch again

Watching from the list's version means a change between the list and the watch is sent by the
watch, and a fresh list after each watch means nothing that happened while no watch was open is
missed.  A watch that fails (410 Gone included) or ends at once backs off (0.1 s, doubling to
2 s) before the next list, so a broken watch endpoint costs a list per backoff, never a busy loop
(this thread runs as long as the process).

The cache is *current* while a watch opened on its list is streaming and that list is younger
than ``STALE_AFTER_S`` (one watch's longest life plus a read timeout: the server ends a watch by
then, and a silent stream times out by then, so an older list means the watch is stuck).  Outside
that (before the first list, between a watch's end and the next one, while the API fails)
``deployment`` answers ``None`` and the spawner reads the Deployment as it always did.

The spawner takes only "running" from the cache.  A Deployment the cache lacks, holds under
another uid or shows not ready is read again (one created after the list may not have reached the
cache yet; a read is authoritative), so a lagging cache can delay a failure by the watch's
latency, never invent one.

Cost, per worker process that has polled: one open watch, and one list of the release's app
Deployments per ``APP_WATCH_SECONDS``; a running, ready app costs nothing per poll.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Iterator
from typing import Any

from profilerhub_worker.spawners.kube_api import REQUEST_TIMEOUT, KubeAPI, KubeAPIError, WatchEnded
from profilerhub_worker.spawners.manifests import KubeOptions, instance_selector

log = logging.getLogger(__name__)

#: The longest one watch of the app Deployments is asked to last before a fresh list.
APP_WATCH_SECONDS = 300
#: How old the list under an open watch may be before the cache counts as stale.
STALE_AFTER_S = APP_WATCH_SECONDS + 2 * REQUEST_TIMEOUT
#: How long a first ``deployment`` waits for the first list and watch before reading instead.
FIRST_SYNC_WAIT_S = 2 * REQUEST_TIMEOUT
WATCH_BACKOFF_START_S = 0.1
WATCH_BACKOFF_MAX_S = 2.0


class DeploymentWatch:
    """The app Deployments of one installation (API URL, namespace, release), kept current by a
    list-then-watch thread (module doc)."""

    def __init__(self, opts: KubeOptions) -> None:
        self.api = KubeAPI(opts)
        self.selector = instance_selector(opts)
        self._changed = threading.Condition()
        self._cache: dict[str, dict[str, Any]] = {}
        self._listed_at: float | None = None  # the list the open watch continues; None: no watch open
        self._tried = False  # the first list and watch came out, one way or the other
        self._stopping = threading.Event()
        self._thread = threading.Thread(
            target=self._run, name=f"watch-app-deployments-{opts.namespace}", daemon=True
        )
        self._thread.start()

    @property
    def alive(self) -> bool:
        return self._thread.is_alive() and not self._stopping.is_set()

    def deployment(self, name: str) -> dict[str, Any] | None:
        """Deployment ``name`` as the cache holds it while the cache is current; ``None`` when it
        is not current or holds no such Deployment (read it then).  Waits for the first list and
        watch (``FIRST_SYNC_WAIT_S`` at most)."""
        with self._changed:
            self._changed.wait_for(lambda: self._tried, FIRST_SYNC_WAIT_S)
            if self._listed_at is None or time.monotonic() - self._listed_at > STALE_AFTER_S:
                return None
            return self._cache.get(name)

    def stop(self) -> None:
        """End the thread (at its open watch's next event or end)."""
        self._stopping.set()

    def _run(self) -> None:
        backoff = WATCH_BACKOFF_START_S
        while not self._stopping.is_set():
            opened, events = time.monotonic(), 0
            try:
                for event in self._list_then_watch():
                    events += 1
                    self._apply(event)
                    if self._stopping.is_set():
                        return
            except (KubeAPIError, WatchEnded) as exc:  # 410 Gone too: a fresh list gives a current version
                log.info("watching the app deployments: %s; listing again", exc)
                events = 0
            finally:
                with self._changed:
                    self._listed_at = None
                    self._tried = True
                    self._changed.notify_all()
            if events == 0 and time.monotonic() - opened < 1.0:  # failed or cut at once: back off
                self._stopping.wait(backoff)
                backoff = min(backoff * 2, WATCH_BACKOFF_MAX_S)
            else:
                backoff = WATCH_BACKOFF_START_S

    def _list_then_watch(self) -> Iterator[dict[str, Any]]:
        """List into the cache, open a watch from the list's version, and answer its events."""
        deployments, version = self.api.list_at(self.api.apps.list_namespaced_deployment, self.selector)
        listed = time.monotonic()
        with self._changed:
            self._cache = {
                d["metadata"]["name"]: d for d in deployments if (d.get("metadata") or {}).get("name")
            }
        events = self.api.watch(
            self.api.apps.list_namespaced_deployment, self.selector, version, APP_WATCH_SECONDS
        )
        with self._changed:
            self._listed_at = listed
            self._tried = True
            self._changed.notify_all()
        return events

    def _apply(self, event: dict[str, Any]) -> None:
        deployment = event.get("object") or {}
        name = (deployment.get("metadata") or {}).get("name")
        if not name:
            return
        with self._changed:
            if event.get("type") == "DELETED":
                self._cache.pop(name, None)
            else:  # ADDED, MODIFIED
                self._cache[name] = deployment


_watches: dict[tuple[str, str, str], DeploymentWatch] = {}
_watches_lock = threading.Lock()


def deployment_watch(opts: KubeOptions) -> DeploymentWatch:
    """This process's watch of the app Deployments ``opts`` names (started on first use, and again
    if its thread died)."""
    key = (opts.api_url, opts.namespace, instance_selector(opts))
    with _watches_lock:
        watch = _watches.get(key)
        if watch is None or not watch.alive:
            watch = _watches[key] = DeploymentWatch(opts)
        return watch


def stop_watches(api_url: str | None = None) -> None:
    """Stop this process's watches (those of ``api_url``, or all). A worker never needs to: its
    watch threads are daemons and end with it; tests do it to stand for a restarted worker, or
    when their API server goes."""
    with _watches_lock:
        for key in [key for key in _watches if api_url is None or key[0] == api_url]:
            _watches.pop(key).stop()


def _forget_after_fork() -> None:
    """A forked child has the parent's registry but none of its threads: start afresh."""
    global _watches_lock
    _watches.clear()
    _watches_lock = threading.Lock()


os.register_at_fork(after_in_child=_forget_after_fork)

__all__ = ["APP_WATCH_SECONDS", "STALE_AFTER_S", "DeploymentWatch", "deployment_watch", "stop_watches"]
