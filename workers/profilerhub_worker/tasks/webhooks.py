"""The webhook delivery task: a thin Celery wrapper over ``profilerhub_worker.webhooks.deliver``.

It takes a delivery id. A failed attempt worth repeating is retried by Celery after the backoff
``deliver`` computed; ``deliver`` counts the attempts on the row (``webhook_max_attempts``), so
the task itself sets no retry limit.
"""

from __future__ import annotations

from celery import Task, shared_task

from profilerhub_core.tasks import DELIVER_WEBHOOK
from profilerhub_worker.tasks.ingest import ingest_context
from profilerhub_worker.webhooks import deliver


@shared_task(name=DELIVER_WEBHOOK, bind=True, max_retries=None, acks_late=True)
def deliver_webhook(self: Task, delivery_id: str) -> str:
    """Pending -> Delivered | Failed, or again later."""
    outcome = deliver(ingest_context(self), delivery_id)
    if outcome.result == "retry":
        raise self.retry(args=[delivery_id], countdown=outcome.countdown)
    return outcome.result
