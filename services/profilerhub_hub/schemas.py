"""Request and response bodies of the API: ``XCreate`` / ``XUpdate`` in, ``XRead`` out.

Request models forbid unknown fields, so a typo is a 422 and not a silently ignored setting.
"""

from __future__ import annotations

from datetime import datetime
from typing import Generic, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictInt

from profilerhub_core.db.models import ApiToken, AuditEvent, Domain, DomainStatus, Role, UserProfile
from profilerhub_core.domain_settings import DomainSettings, Quantity
from profilerhub_core.names import ResourceName
from profilerhub_hub.permissions import Action, Caller
from profilerhub_hub.rule_schemas import RuleConfigs

T = TypeVar("T")


class RequestModel(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Page(BaseModel, Generic[T]):
    """One page of a list. Pass ``next_token`` back to get the next; null on the last page."""

    items: list[T]
    next_token: str | None


class DomainSettingsUpdate(RequestModel):
    """Only the keys given change (on create: keys left out take their defaults). Strict types,
    the same on create and update: ``"10"`` is not a number and ``1`` is not ``true``."""

    idle_minutes: StrictInt | None = Field(None, ge=0, le=7 * 24 * 60)
    users_manage_own_apps: StrictBool | None = None
    allow_impersonation: StrictBool | None = None
    create_users_on_sign_in: StrictBool | None = None
    max_live_apps: StrictInt | None = Field(None, ge=0, le=10_000)
    job_idle_hours: StrictInt | None = Field(None, ge=0, le=90 * 24)
    user_storage_quota_bytes: StrictInt | None = Field(None, ge=0, le=1 << 60)
    app_cpu_request: Quantity | None = None
    app_cpu_limit: Quantity | None = None
    app_memory_request: Quantity | None = None
    app_memory_limit: Quantity | None = None
    rules: RuleConfigs | None = None


class DomainCreate(RequestModel):
    name: ResourceName
    settings: DomainSettingsUpdate | None = None


class DomainUpdate(RequestModel):
    settings: DomainSettingsUpdate


class DomainRead(BaseModel):
    domain_id: str
    name: str
    status: DomainStatus
    settings: DomainSettings
    created_at: datetime
    updated_at: datetime

    @classmethod
    def of(cls, domain: Domain) -> DomainRead:
        return cls(
            domain_id=domain.id,
            name=domain.name,
            status=domain.status,
            settings=DomainSettings.of(domain.settings),
            created_at=domain.created_at,
            updated_at=domain.updated_at,
        )


class UserCreate(RequestModel):
    name: ResourceName
    role: Role = Role.user


class UserRead(BaseModel):
    user_id: str
    name: str
    domain: str
    role: Role
    is_platform_admin: bool
    created_at: datetime

    @classmethod
    def of(cls, user: UserProfile) -> UserRead:
        return cls(
            user_id=user.id,
            name=user.name,
            domain=user.domain.name,
            role=user.role,
            is_platform_admin=user.is_platform_admin,
            created_at=user.created_at,
        )


TokenScope = Literal["*"] | Action


class TokenCreate(RequestModel):
    expires_in_seconds: StrictInt | None = Field(
        None, ge=60, le=10 * 366 * 24 * 3600, description="Lifetime; omit for a token that does not expire."
    )
    note: str = Field("", max_length=200, description="What the token is for.")
    scopes: list[TokenScope] = Field(
        default_factory=lambda: ["*"],  # type: ignore[arg-type]
        min_length=1,
        max_length=len(Action) + 1,
        description="Actions this token may perform ('*' = everything its owner may do). At most the "
        "calling token's own scopes (omitted: exactly those).",
    )


class TokenCreated(BaseModel):
    """The only response that contains the secret: store it now."""

    token: str
    token_id: str
    prefix: str
    expires_at: datetime | None
    scopes: list[str]
    note: str

    @classmethod
    def of(cls, token: ApiToken, secret: str) -> TokenCreated:
        return cls(token=secret, token_id=token.id, prefix=token.prefix, expires_at=token.expires_at,
                   scopes=list(token.scopes), note=token.note)  # fmt: skip


class TokenRead(BaseModel):
    token_id: str
    prefix: str
    note: str
    scopes: list[str]
    status: Literal["active", "revoked", "expired"]
    created_at: datetime
    expires_at: datetime | None
    revoked_at: datetime | None
    last_used_at: datetime | None
    created_by: str | None = Field(
        None,
        description="Who made it for this user, when not the user: it cannot open apps unless "
        "the domain allows impersonation.",
    )

    @classmethod
    def of(cls, token: ApiToken, now: datetime) -> TokenRead:
        status: Literal["active", "revoked", "expired"] = "active"
        if token.revoked_at is not None:
            status = "revoked"
        elif token.expires_at is not None and token.expires_at <= now:
            status = "expired"
        return cls(
            token_id=token.id,
            prefix=token.prefix,
            note=token.note,
            scopes=list(token.scopes),
            status=status,
            created_at=token.created_at,
            expires_at=token.expires_at,
            revoked_at=token.revoked_at,
            last_used_at=token.last_used_at,
            created_by=token.created_by,
        )


class MeRead(BaseModel):
    user: str
    domain: str
    role: str
    is_platform_admin: bool
    token_id: str
    scopes: list[str]
    impersonated_by: str | None = Field(None, description="Who made this credential for you, if not you.")
    session: bool = Field(False, description="True when signed in with a browser session, not a token.")

    @classmethod
    def of(cls, caller: Caller) -> MeRead:
        return cls(
            user=caller.user_name,
            domain=caller.domain_name,
            role=caller.role,
            is_platform_admin=caller.is_platform_admin,
            token_id=caller.token_id,
            scopes=list(caller.scopes),
            impersonated_by=caller.impersonated_by,
            session=caller.session_id is not None,
        )


class AuditEventRead(BaseModel):
    event_id: int
    at: datetime
    actor: str
    action: str
    target_type: str
    target: str
    domain: str | None
    outcome: str
    detail: dict[str, object]

    @classmethod
    def of(cls, event: AuditEvent) -> AuditEventRead:
        return cls(
            event_id=event.id,
            at=event.at,
            actor=event.actor,
            action=event.action,
            target_type=event.target_type,
            target=event.target,
            domain=event.domain,
            outcome=event.outcome,
            detail=event.detail,
        )


class Health(BaseModel):
    status: Literal["ok", "unavailable"]
    checks: dict[str, str] = Field(default_factory=dict)
    queues: dict[str, str] = Field(
        default_factory=dict,
        description='Per Celery queue (the app queue, its "-ingest" queue): "ok: 2 workers" or "none: no '
        'worker consumes it (...)"; reported, not part of readiness (/readyz only).',
    )
