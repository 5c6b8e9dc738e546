"""Request and response bodies of the webhook API (``WebhookCreate`` in, ``WebhookRead`` and
``DeliveryRead`` out); docs/webhooks.md."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from profilerhub_core.db.models import DeliveryStatus, Webhook, WebhookDelivery, WebhookScope
from profilerhub_core.webhooks.addresses import MAX_URL

Event = Literal["rule.IssuesFound", "job.Ready", "job.Failed"]
ALL_EVENTS: tuple[Event, ...] = ("rule.IssuesFound", "job.Ready", "job.Failed")


class WebhookCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")

    url: str = Field(min_length=1, max_length=MAX_URL, description="Where events are POSTed (https://…).")
    events: list[Event] = Field(
        default_factory=lambda: list(ALL_EVENTS),
        min_length=1,
        max_length=3,
        description="Which events it gets (default: all).",
    )
    job_id: str | None = Field(
        None, max_length=36, description="Only this job's events (a user's webhooks only); default every job."
    )
    note: str = Field("", max_length=200)


class WebhookRead(BaseModel):
    webhook_id: str
    scope: WebhookScope
    domain: str
    user: str | None
    job_id: str | None
    url: str
    events: list[str]
    note: str
    created_by: str
    created_at: datetime

    @classmethod
    def of(cls, hook: Webhook, domain: str, user: str | None) -> WebhookRead:
        return cls(
            webhook_id=hook.id,
            scope=hook.scope,
            domain=domain,
            user=user,
            job_id=hook.job_id,
            url=hook.url,
            events=list(hook.events),
            note=hook.note,
            created_by=hook.created_by,
            created_at=hook.created_at,
        )


class WebhookCreated(WebhookRead):
    secret: str = Field(description="Signs every delivery (HMAC-SHA256); shown this once.")


class DeliveryRead(BaseModel):
    delivery_id: str
    webhook_id: str
    job_id: str | None
    event: str
    status: DeliveryStatus
    attempts: list[dict[str, Any]] = Field(description="Each try: at, status_code, error, ms.")
    next_attempt_at: datetime | None
    created_at: datetime
    finished_at: datetime | None
    payload: dict[str, Any]

    @classmethod
    def of(cls, d: WebhookDelivery) -> DeliveryRead:
        return cls(
            delivery_id=d.id,
            webhook_id=d.webhook_id,
            job_id=d.job_id,
            event=d.event,
            status=d.status,
            attempts=list(d.attempts or []),
            next_attempt_at=d.next_attempt_at,
            created_at=d.created_at,
            finished_at=d.finished_at,
            payload=d.payload,
        )


__all__ = ["DeliveryRead", "WebhookCreate", "WebhookCreated", "WebhookRead"]
