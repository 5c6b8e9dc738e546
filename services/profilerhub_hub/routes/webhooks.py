"""Webhooks: ``/domains/{domain}/webhooks[/{id}[/deliveries]]`` (the domain's: every job there,
for its administrators) and ``/domains/{domain}/users/{user}/webhooks[…]`` (a user's: every job
of theirs, or one with ``job_id``). The same handlers serve both; ``target.user`` tells them
apart. docs/webhooks.md.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import Response

from profilerhub_core.db.models import Webhook, WebhookDelivery
from profilerhub_core.errors import InvalidInput
from profilerhub_core.records import jobs, webhooks
from profilerhub_hub.audit import commit_audited
from profilerhub_hub.deps import PageDep, Resolved, SessionDep, SettingsDep, allow
from profilerhub_hub.permissions import Action
from profilerhub_hub.routes.paths import DOMAIN_WEBHOOKS, IN_DOMAIN, OF_USER, USER_WEBHOOKS, api_router
from profilerhub_hub.schemas import Page
from profilerhub_hub.webhook_schemas import DeliveryRead, WebhookCreate, WebhookCreated, WebhookRead

router = api_router(tags=["webhooks"])


def _read(target: Resolved, hook: Webhook) -> WebhookRead:
    assert target.domain is not None
    return WebhookRead.of(hook, target.domain.name, target.user.name if target.user else None)


def _hook(session: SessionDep, target: Resolved, webhook_id: str) -> Webhook:
    assert target.domain is not None
    return webhooks.require_webhook(session, target.domain, target.user, webhook_id)


def create_webhook(
    body: WebhookCreate,
    session: SessionDep,
    settings: SettingsDep,
    target: Annotated[Resolved, allow(Action.CreateWebhook)],
) -> WebhookCreated:
    """A webhook; the answer's ``secret`` (shown once) signs its deliveries."""
    assert target.domain is not None
    job = None
    if body.job_id is not None:
        if target.user is None:
            raise InvalidInput("job_id is for a user's webhooks: POST …/users/{user}/webhooks")
        job = jobs.require_job(session, target.user, body.job_id)
    hook, secret = webhooks.create_webhook(
        session,
        target.domain,
        target.user,
        url=body.url,
        events=body.events,
        created_by=target.caller.actor,
        allowed_networks=settings.webhook_allowed_networks,
        job=job,
        note=body.note,
    )
    detail = {"url": hook.url, "events": hook.events, "scope": hook.scope.value, "job_id": hook.job_id}
    commit_audited(session, target, Action.CreateWebhook, hook.id, detail=detail)
    return WebhookCreated(**_read(target, hook).model_dump(), secret=secret)


def list_webhooks(
    session: SessionDep, page: PageDep, target: Annotated[Resolved, allow(Action.ListWebhooks)]
) -> Page[WebhookRead]:
    """The domain's own webhooks, or the user's (theirs and their jobs'), newest first."""
    assert target.domain is not None
    stmt = webhooks.webhooks_query(target.domain, target.user)
    owner = target.user.id if target.user else target.domain.id
    return page.fetch(
        session,
        stmt,
        [Webhook.created_at, Webhook.id],
        lambda hook: _read(target, hook),
        scope=f"webhooks:{owner}",
        descending=True,
    )


def describe_webhook(
    webhook_id: str, session: SessionDep, target: Annotated[Resolved, allow(Action.DescribeWebhook)]
) -> WebhookRead:
    return _read(target, _hook(session, target, webhook_id))


def list_deliveries(
    webhook_id: str,
    session: SessionDep,
    page: PageDep,
    target: Annotated[Resolved, allow(Action.DescribeWebhook)],
) -> Page[DeliveryRead]:
    """The webhook's delivery log, newest first: each event, its status and every attempt."""
    hook = _hook(session, target, webhook_id)
    return page.fetch(
        session,
        webhooks.deliveries_query(hook),
        [WebhookDelivery.created_at, WebhookDelivery.id],
        DeliveryRead.of,
        scope=f"deliveries:{hook.id}",
        descending=True,
    )


def delete_webhook(
    webhook_id: str, session: SessionDep, target: Annotated[Resolved, allow(Action.DeleteWebhook)]
) -> Response:
    hook = _hook(session, target, webhook_id)
    webhooks.delete_webhook(session, hook)
    commit_audited(session, target, Action.DeleteWebhook, webhook_id)
    return Response(status_code=204)


_ROUTES: list[tuple[str, str, Any, dict[str, Any]]] = [
    ("", "POST", create_webhook, {"status_code": 201}),
    ("", "GET", list_webhooks, {}),
    ("/{webhook_id}", "GET", describe_webhook, {}),
    ("/{webhook_id}/deliveries", "GET", list_deliveries, {}),
    ("/{webhook_id}", "DELETE", delete_webhook, {"status_code": 204, "response_class": Response}),
]
for _base, _extra in ((DOMAIN_WEBHOOKS, IN_DOMAIN), (USER_WEBHOOKS, OF_USER)):
    for _suffix, _method, _endpoint, _options in _ROUTES:
        router.add_api_route(_base + _suffix, _endpoint, methods=[_method], openapi_extra=_extra, **_options)
