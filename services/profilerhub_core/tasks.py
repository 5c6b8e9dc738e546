"""The contract between the hub and the workers: task names, the queue, payloads, transport.

The hub sends tasks by name and never imports task code; a worker registers its tasks under these
names. Neither imports the other: both import this module.

Payload: every task takes exactly one positional argument, the id of the row it works on
(``SPAWN_APP`` and ``DELETE_APP`` an app id, ``INGEST_JOB`` and ``INGEST_CAPTURES`` a job id,
``DELIVER_WEBHOOK`` a webhook delivery id); the periodic tasks take
none. A sender commits the row first and enqueues after (``docs/architecture.md``), so a task
re-reads the row and moves it on with a compare-and-set: a duplicate or late task does nothing.

Transport: JSON only (an argument is an id, never a pickled object); every key of a deployment
lives under ``{queue}:`` in Redis, so several deployments (or test runs) share one server. Two
queues: ``queue`` for app lifecycle and webhooks, ``ingest_queue(queue)`` for every job task
(``profilerhub.jobs.*``); the routes are in ``transport_config``, which sender and worker share.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from celery import Celery

# The default queue (PROFILERHUB_CELERY_QUEUE overrides it): app lifecycle and webhooks. Job tasks
# (ingest, the job periodic tasks) go to its ingest queue, ``ingest_queue(queue)``, so a flood of
# ingest never delays a user's CreateApp: a worker consumes one kind or both (``worker --queues``).
APP_QUEUE = "profilerhub-apps"
#: What ``profilerhub worker --queues`` takes: the app queue, the ingest queue.
QUEUE_KINDS = ("apps", "ingest")


def ingest_queue(queue: str) -> str:
    """The ingest queue beside the app queue ``queue`` (its Redis list: ``{queue}:{queue}-ingest``)."""
    return f"{queue}-ingest"


def queues_of(queue: str, kinds: tuple[str, ...] | list[str] = QUEUE_KINDS) -> list[str]:
    """The queue names a worker of ``kinds`` consumes; ValueError names an unknown kind."""
    unknown = [kind for kind in kinds if kind not in QUEUE_KINDS]
    if unknown or not kinds:
        raise ValueError(f"unknown queue kind {unknown or kinds!r}: use {', '.join(QUEUE_KINDS)} or both")
    return [queue if kind == "apps" else ingest_queue(queue) for kind in QUEUE_KINDS if kind in kinds]


SPAWN_APP = "profilerhub.apps.spawn"
DELETE_APP = "profilerhub.apps.delete"
RECONCILE_APPS = "profilerhub.apps.reconcile"
POLL_APPS = "profilerhub.apps.poll"
CULL_IDLE_APPS = "profilerhub.apps.cull_idle"

INGEST_JOB = "profilerhub.jobs.ingest"
# One trace of a job being ingested (job id, claim, n, raw key, name): sent by the ingest task
# holding the job's claim, one per trace (``profilerhub_worker.ingest.fanout``).
INGEST_TRACE = "profilerhub.jobs.ingest_trace"
RECONCILE_JOBS = "profilerhub.jobs.reconcile"
SWEEP_STORAGE = "profilerhub.jobs.sweep_storage"
SERIES_RETENTION = "profilerhub.jobs.series_retention"
LIVE_RULES = "profilerhub.jobs.live_rules"
# A running job's on-demand capture traces, ingested as they arrive (sent by the hub when one is
# uploaded through it, and by the live scan for the rest): idempotent, a job id.
INGEST_CAPTURES = "profilerhub.jobs.ingest_captures"

# A worker sends it for each delivery row it adds (a rule's finding, a job Ready or Failed).
DELIVER_WEBHOOK = "profilerhub.webhooks.deliver"

# Tasks a request sends, with the one id they take.
SENT_BY_HUB = (SPAWN_APP, DELETE_APP, INGEST_JOB, INGEST_CAPTURES)
# Tasks beat sends on a schedule, without arguments.
PERIODIC = (
    RECONCILE_APPS,
    POLL_APPS,
    CULL_IDLE_APPS,
    RECONCILE_JOBS,
    SWEEP_STORAGE,
    SERIES_RETENTION,
    LIVE_RULES,
)


# Each running worker keeps ``{queue}:worker-heartbeat:{hostname}`` alive in Redis (refreshed
# every WORKER_HEARTBEAT_SECONDS, expiring after WORKER_HEARTBEAT_TTL), its value the queues it
# consumes (``heartbeat_value``); /readyz reads them, and says per queue whether a worker takes it.
WORKER_HEARTBEAT_SECONDS = 10
WORKER_HEARTBEAT_TTL = 30


def worker_heartbeat_prefix(queue: str) -> str:
    return f"{queue}:worker-heartbeat:"


def heartbeat_value(consumed: list[str]) -> str:
    """What a worker's heartbeat key holds: the names of the queues it consumes, comma-separated."""
    return ",".join(consumed)


def heartbeat_queues(value: bytes | str | None, queue: str) -> list[str]:
    """The queues a heartbeat ``value`` says its worker consumes; a worker from before they were
    written (the value ``1``) consumed both of deployment ``queue``'s."""
    text = value.decode() if isinstance(value, bytes) else (value or "")
    if text == "1":
        return queues_of(queue)
    return [name for name in text.split(",") if name]


def transport_config(queue: str) -> dict[str, Any]:
    """The Celery settings a sender and a worker must agree on to reach each other."""
    return {
        "task_serializer": "json",
        "result_serializer": "json",
        "accept_content": ["json"],
        "task_ignore_result": True,
        "task_default_queue": queue,
        "task_routes": {
            "profilerhub.apps.*": {"queue": queue},
            "profilerhub.webhooks.*": {"queue": queue},
            "profilerhub.jobs.*": {"queue": ingest_queue(queue)},
        },
        "broker_transport_options": {"visibility_timeout": 600, "global_keyprefix": f"{queue}:"},
        "broker_connection_retry_on_startup": True,
        "enable_utc": True,
    }


def make_producer(broker_url: str, *, queue: str = APP_QUEUE) -> Celery:
    """A Celery app that only sends these tasks by name (no task code imported)."""
    from celery import Celery

    app = Celery("profilerhub", broker=broker_url, include=[])
    app.conf.update(transport_config(queue))
    return app


__all__ = [
    "APP_QUEUE",
    "CULL_IDLE_APPS",
    "DELETE_APP",
    "DELIVER_WEBHOOK",
    "INGEST_CAPTURES",
    "INGEST_JOB",
    "INGEST_TRACE",
    "PERIODIC",
    "POLL_APPS",
    "QUEUE_KINDS",
    "RECONCILE_APPS",
    "RECONCILE_JOBS",
    "SENT_BY_HUB",
    "SERIES_RETENTION",
    "SPAWN_APP",
    "SWEEP_STORAGE",
    "WORKER_HEARTBEAT_SECONDS",
    "WORKER_HEARTBEAT_TTL",
    "heartbeat_queues",
    "heartbeat_value",
    "ingest_queue",
    "make_producer",
    "queues_of",
    "worker_heartbeat_prefix",
    "transport_config",
]
