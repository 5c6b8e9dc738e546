"""The database schema: SQLAlchemy 2 declarative models.

Every table the hub, workers and apps share lives here, so a feature that only adds behaviour needs
no migration. Status columns hold the ``StrEnum`` values below as plain strings (no native enum
types), which keeps SQLite and PostgreSQL alike. Timestamps are timezone-aware UTC on both.

Changing a model means adding an Alembic revision (``alembic revision --autogenerate`` against a
migrated database); ``tests/core`` checks that the models and the migrations agree.
"""

from __future__ import annotations

import enum
import uuid
from datetime import UTC, datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Dialect
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship

NAMING_CONVENTION = {
    "ix": "ix_%(table_name)s_%(column_0_N_name)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}

# The reserved domain that holds platform administrators (see UserProfile).
SYSTEM_DOMAIN = "system"


def utcnow() -> datetime:
    return datetime.now(UTC)


def new_id() -> str:
    return str(uuid.uuid4())


class UTCDateTime(sa.TypeDecorator[datetime]):
    """A timestamp stored as UTC and always read back timezone-aware (SQLite keeps no zone)."""

    impl = sa.DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError("naive datetime given to a UTC column")
        value = value.astimezone(UTC)
        return value.replace(tzinfo=None) if dialect.name == "sqlite" else value

    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


class DomainStatus(enum.StrEnum):
    Pending = "Pending"
    InService = "InService"
    Updating = "Updating"
    Deleting = "Deleting"
    Failed = "Failed"


class Role(enum.StrEnum):
    admin = "admin"
    user = "user"


class AppType(enum.StrEnum):
    DetailedProfiler = "DetailedProfiler"
    TensorBoard = "TensorBoard"


class AppStatus(enum.StrEnum):
    Pending = "Pending"
    InService = "InService"
    Deleting = "Deleting"
    Deleted = "Deleted"
    Failed = "Failed"


class JobStatus(enum.StrEnum):
    InProgress = "InProgress"
    Processing = "Processing"
    Ready = "Ready"
    Failed = "Failed"


def _enum(cls: type[enum.StrEnum]) -> sa.Enum:
    return sa.Enum(cls, native_enum=False, length=32, values_callable=lambda e: [m.value for m in e])


class Base(DeclarativeBase):
    metadata = sa.MetaData(naming_convention=NAMING_CONVENTION)
    type_annotation_map = {datetime: UTCDateTime(), dict[str, Any]: sa.JSON(), list[str]: sa.JSON()}


class Timestamped:
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(default=utcnow, onupdate=utcnow)


class Domain(Timestamped, Base):
    """A group of users with shared settings (``profilerhub_core.domain_settings.DomainSettings``)."""

    __tablename__ = "domains"

    id: Mapped[str] = mapped_column(sa.String(36), primary_key=True, default=new_id)
    name: Mapped[str] = mapped_column(sa.String(63), unique=True)
    status: Mapped[DomainStatus] = mapped_column(_enum(DomainStatus), default=DomainStatus.InService)
    settings: Mapped[dict[str, Any]] = mapped_column(default=dict)


class UserProfile(Base):
    """A user of one domain. ``role`` admin = domain administrator.

    Platform administrators are the admins of the reserved domain ``system`` (created at first
    start): ``is_platform_admin`` is true exactly for them. Keeping them in a domain means every
    user has one, and auth and audit need no special case.
    """

    __tablename__ = "user_profiles"
    __table_args__ = (sa.UniqueConstraint("domain_id", "name"),)

    id: Mapped[str] = mapped_column(sa.String(36), primary_key=True, default=new_id)
    domain_id: Mapped[str] = mapped_column(sa.ForeignKey("domains.id", ondelete="RESTRICT"), index=True)
    name: Mapped[str] = mapped_column(sa.String(63))
    role: Mapped[Role] = mapped_column(_enum(Role))
    is_platform_admin: Mapped[bool] = mapped_column(default=False)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    # Changed by an update of the profile (its role, its stored settings); None: never since created.
    updated_at: Mapped[datetime | None] = mapped_column(default=None)
    # SageMaker ``UserSettings`` given by boto3 callers: stored and echoed (docs/sagemaker-api.md).
    aws_settings: Mapped[dict[str, Any] | None] = mapped_column(default=None)
    # The last "sign out everywhere" (or whatever else ends every session of the user): a one-time
    # link issued before it is refused, since links live in no table that could be updated.
    signed_out_at: Mapped[datetime | None] = mapped_column(default=None)

    domain: Mapped[Domain] = relationship(lazy="joined", innerjoin=True)


class ApiToken(Base):
    """A bearer token. Only ``token_hash`` (sha256 of the secret) is stored; ``prefix`` helps people
    tell their tokens apart. Lookup is one indexed query on ``token_hash``."""

    __tablename__ = "api_tokens"

    id: Mapped[str] = mapped_column(sa.String(36), primary_key=True, default=new_id)
    user_id: Mapped[str] = mapped_column(sa.ForeignKey("user_profiles.id", ondelete="CASCADE"), index=True)
    token_hash: Mapped[str] = mapped_column(sa.String(64), unique=True)
    prefix: Mapped[str] = mapped_column(sa.String(16))
    scopes: Mapped[list[str]] = mapped_column(default=lambda: ["*"])
    note: Mapped[str] = mapped_column(sa.String(200), default="")
    expires_at: Mapped[datetime | None] = mapped_column(default=None)
    revoked_at: Mapped[datetime | None] = mapped_column(default=None)
    last_used_at: Mapped[datetime | None] = mapped_column(default=None)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    # Who minted it, when not its user (an administrator): such a token impersonates its user and
    # cannot open apps unless the domain allows impersonation. None: the user's own (or the
    # operator's, from the hub's command line).
    created_by: Mapped[str | None] = mapped_column(sa.String(130), default=None)
    # Lineage (``records/sessions.py``): the kind of credential at the root of the chain that minted
    # it (``password``, ``oidc``, ``token``, ``access-key``), carried down from token to token. None:
    # the operator's (bootstrap, the command line), or minted before revision 0016. A password reset
    # revokes the user's ``password`` ones: whoever knew the old password may have minted them.
    source: Mapped[str | None] = mapped_column(sa.String(16), default=None)


class BrowserSession(Base):
    """A signed-in browser: the console's session (``kind`` console) or one app's (``kind`` app,
    ``app_id`` set). Only ``secret_hash`` is stored; revoking (sign-out, user deletion, revoking
    the user's tokens, or the token it was made from) ends it at once.

    ``nonce`` is the presigned sign-in link it was made from (unique: a link is used once).
    ``impersonated_by`` names the administrator whose credential started it, if not its user's.

    Lineage (``records/sessions.py``): ``source`` is the kind of credential at the root of the
    chain it descends from (``token``, ``access-key``, ``oidc``, ``password``), ``token_id`` that
    root's token or access key if it is one, ``parent_id`` the session whose caller made the link
    that started this one. The session is live only while both are."""

    __tablename__ = "browser_sessions"

    id: Mapped[str] = mapped_column(sa.String(36), primary_key=True, default=new_id)
    user_id: Mapped[str] = mapped_column(sa.ForeignKey("user_profiles.id", ondelete="CASCADE"), index=True)
    secret_hash: Mapped[str] = mapped_column(sa.String(64), unique=True)
    kind: Mapped[str] = mapped_column(sa.String(16))
    app_id: Mapped[str | None] = mapped_column(sa.String(36), default=None)
    token_id: Mapped[str | None] = mapped_column(sa.String(36), default=None, index=True)
    parent_id: Mapped[str | None] = mapped_column(sa.String(36), default=None, index=True)
    source: Mapped[str] = mapped_column(sa.String(16), default="token", server_default="token")
    scopes: Mapped[list[str]] = mapped_column(default=lambda: ["*"])
    impersonated_by: Mapped[str | None] = mapped_column(sa.String(130), default=None)
    nonce: Mapped[str | None] = mapped_column(sa.String(64), default=None, unique=True)
    via: Mapped[str] = mapped_column(sa.String(16))
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    expires_at: Mapped[datetime] = mapped_column()
    revoked_at: Mapped[datetime | None] = mapped_column(default=None)


class LocalPassword(Base):
    """A user's local-account password (one per user at most): only its argon2 hash. ``id`` is new
    every time the password is set, so what started from one password can tell it from the next.
    A reset (a new invitation) deletes the row."""

    __tablename__ = "local_passwords"

    id: Mapped[str] = mapped_column(sa.String(36), primary_key=True, default=new_id)
    user_id: Mapped[str] = mapped_column(sa.ForeignKey("user_profiles.id", ondelete="CASCADE"), unique=True)
    password_hash: Mapped[str] = mapped_column(sa.String(200))
    set_at: Mapped[datetime] = mapped_column(default=utcnow)


class TwoFactor(Base):
    """A local account's second factor: a TOTP secret (``profilerhub_core.totp``, base32). Pending
    until the user confirms a code (``enabled_at``); from then on a password sign-in needs a code.
    ``last_step`` is the step of the last code accepted: none is accepted twice. A reset (a new
    invitation) deletes the row, as it does the password."""

    __tablename__ = "two_factors"

    user_id: Mapped[str] = mapped_column(
        sa.ForeignKey("user_profiles.id", ondelete="CASCADE"), primary_key=True
    )
    secret: Mapped[str] = mapped_column(sa.String(64))
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    enabled_at: Mapped[datetime | None] = mapped_column(default=None)
    last_step: Mapped[int | None] = mapped_column(sa.BigInteger, default=None)


class Invitation(Base):
    """A one-time link that lets a user choose their local-account password. Only ``secret_hash``
    is stored; ``used_at`` is set once (compare-and-set), ``revoked_at`` by a revocation or a newer
    invitation of the same user. ``created_by`` is the administrator who made it."""

    __tablename__ = "invitations"

    id: Mapped[str] = mapped_column(sa.String(36), primary_key=True, default=new_id)
    user_id: Mapped[str] = mapped_column(sa.ForeignKey("user_profiles.id", ondelete="CASCADE"), index=True)
    secret_hash: Mapped[str] = mapped_column(sa.String(64), unique=True)
    created_by: Mapped[str] = mapped_column(sa.String(130))
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    expires_at: Mapped[datetime] = mapped_column()
    used_at: Mapped[datetime | None] = mapped_column(default=None)
    revoked_at: Mapped[datetime | None] = mapped_column(default=None)


class AuditEvent(Base):
    """Who did what to which resource, with the outcome. Names, not foreign keys: the trail outlives
    the resources it mentions."""

    __tablename__ = "audit_events"
    __table_args__ = (sa.Index(None, "domain", "id"),)

    id: Mapped[int] = mapped_column(sa.BigInteger().with_variant(sa.Integer(), "sqlite"), primary_key=True)
    at: Mapped[datetime] = mapped_column(default=utcnow, index=True)
    actor: Mapped[str] = mapped_column(sa.String(130), index=True)
    action: Mapped[str] = mapped_column(sa.String(64), index=True)
    target_type: Mapped[str] = mapped_column(sa.String(32))
    target: Mapped[str] = mapped_column(sa.String(300))
    domain: Mapped[str | None] = mapped_column(sa.String(63), default=None)
    outcome: Mapped[str] = mapped_column(sa.String(16))
    detail: Mapped[dict[str, Any]] = mapped_column(default=dict)


LIVE_APP = sa.text("status != 'Deleted'")


class App(Timestamped, Base):
    """A user's profiler (or TensorBoard) app. At most one live app per (user, app_type, app_name);
    deleted ones stay readable. ``spawner_state`` is the spawner's JSON state, so a restarted
    worker finds the instance again."""

    __tablename__ = "apps"
    __table_args__ = (
        sa.Index(
            "uq_apps_live_user_type_name",
            "user_id",
            "app_type",
            "app_name",
            unique=True,
            sqlite_where=LIVE_APP,
            postgresql_where=LIVE_APP,
        ),
        # Finding a user's app by type and name, deleted ones included (describe, open, delete):
        # the partial index above serves only queries that exclude deleted apps.
        sa.Index(None, "user_id", "app_type", "app_name"),
        sa.Index(None, "domain_id", "status"),
        sa.Index(None, "status"),
    )

    id: Mapped[str] = mapped_column(sa.String(36), primary_key=True, default=new_id)
    domain_id: Mapped[str] = mapped_column(sa.ForeignKey("domains.id", ondelete="RESTRICT"))
    user_id: Mapped[str] = mapped_column(sa.ForeignKey("user_profiles.id", ondelete="CASCADE"))
    app_type: Mapped[AppType] = mapped_column(_enum(AppType))
    app_name: Mapped[str] = mapped_column(sa.String(63), default="default")
    status: Mapped[AppStatus] = mapped_column(_enum(AppStatus), default=AppStatus.Pending)
    failure_reason: Mapped[str | None] = mapped_column(sa.Text, default=None)
    endpoint: Mapped[str | None] = mapped_column(sa.String(300), default=None)
    spawner_state: Mapped[dict[str, Any]] = mapped_column(default=dict)
    status_changed_at: Mapped[datetime] = mapped_column(default=utcnow)
    last_activity_at: Mapped[datetime | None] = mapped_column(default=None)


class ResourceTag(Base):
    """A SageMaker-style tag (``Key``/``Value``) on a domain, a user profile or an app.

    ``resource`` names the tagged row (``domain:{id}``, ``user:{id}``, ``app:{id}``), one key at
    most once; exactly one of the foreign keys is set, so the tags go with their resource."""

    __tablename__ = "resource_tags"
    __table_args__ = (sa.UniqueConstraint("resource", "key"),)

    id: Mapped[int] = mapped_column(sa.BigInteger().with_variant(sa.Integer(), "sqlite"), primary_key=True)
    resource: Mapped[str] = mapped_column(sa.String(48))
    domain_id: Mapped[str | None] = mapped_column(
        sa.ForeignKey("domains.id", ondelete="CASCADE"), default=None, index=True
    )
    user_id: Mapped[str | None] = mapped_column(
        sa.ForeignKey("user_profiles.id", ondelete="CASCADE"), default=None, index=True
    )
    app_id: Mapped[str | None] = mapped_column(
        sa.ForeignKey("apps.id", ondelete="CASCADE"), default=None, index=True
    )
    key: Mapped[str] = mapped_column(sa.String(128))
    value: Mapped[str] = mapped_column(sa.String(256), default="")
    created_at: Mapped[datetime] = mapped_column(default=utcnow)


#: The jobs list's figures on the job row (written by ingest when a job becomes Ready).
JOB_LIST_FIGURES = ("duration_s", "steps", "gpus", "ranks")


class Job(Timestamped, Base):
    """One profiled training run of one user: raw artifacts in storage, processing status, summary."""

    __tablename__ = "jobs"
    __table_args__ = (sa.Index(None, "user_id", "created_at"), sa.Index(None, "domain_id", "status"))

    id: Mapped[str] = mapped_column(sa.String(36), primary_key=True, default=new_id)
    domain_id: Mapped[str] = mapped_column(sa.ForeignKey("domains.id", ondelete="RESTRICT"))
    user_id: Mapped[str] = mapped_column(sa.ForeignKey("user_profiles.id", ondelete="CASCADE"))
    name: Mapped[str] = mapped_column(sa.String(200))
    status: Mapped[JobStatus] = mapped_column(_enum(JobStatus), default=JobStatus.InProgress)
    failure_reason: Mapped[str | None] = mapped_column(sa.Text, default=None)
    metric_definitions: Mapped[list[Any]] = mapped_column(sa.JSON, default=list)
    summary: Mapped[dict[str, Any] | None] = mapped_column(default=None)
    completed_at: Mapped[datetime | None] = mapped_column(default=None)
    ingest_attempts: Mapped[int] = mapped_column(default=0, server_default="0")
    """How many times ingest has claimed the job (a worker taking back its own claim does not count,
    nor a takeover from a worker that died holding it)."""
    ingest_takeovers: Mapped[int] = mapped_column(default=0, server_default="0")
    """How many times ingest took the job over from a worker that died holding it (no heartbeat)."""
    ingest_heartbeat_at: Mapped[datetime | None] = mapped_column(default=None)
    """Refreshed every few seconds by the ingest holding the claim; stale: its worker is gone."""
    rules: Mapped[list[Any] | None] = mapped_column(sa.JSON, default=None)
    """Rules configured for the job (``[{"rule", "parameters"}]``); None = the domain's defaults."""
    rule_results: Mapped[dict[str, Any] | None] = mapped_column(sa.JSON, default=None)
    """The rules' latest evaluation: ``{"evaluated_at", "final", "status", "rules": [...]}``."""
    undelivered: Mapped[dict[str, Any] | None] = mapped_column(sa.JSON, default=None)
    """What the run's ``complete`` said did not arrive (``{"missing_files", "lost_files", "spill"}``);
    None when everything did."""
    raw_bytes: Mapped[int] = mapped_column(sa.BigInteger, default=0, server_default="0")
    """Bytes of the job's raw files as last counted by an upload (the storage quota's usage)."""
    stop_on: Mapped[list[Any] | None] = mapped_column(sa.JSON, default=None)
    """Rule names whose IssuesFound asks the run to stop (``ph.init(stop_on=...)``); None = never."""
    stop_request: Mapped[dict[str, Any] | None] = mapped_column(sa.JSON, default=None)
    """Set once when a ``stop_on`` rule turned IssuesFound live: ``{"rule", "reason", "requested_at"}``."""
    duration_s: Mapped[float | None] = mapped_column(sa.Float, default=None)
    """The run's duration in seconds, as ingest found it (``summary.job_facts``): the jobs list's
    figures live on the row so it sorts by them in SQL. None until ingest made the job Ready (and
    for jobs ingested before these columns existed); sorted last in either direction."""
    steps: Mapped[int | None] = mapped_column(default=None)
    """Training steps ingest counted (None as for ``duration_s``)."""
    gpus: Mapped[int | None] = mapped_column(default=None)
    """The most GPUs any one trace ran work on (None as for ``duration_s``)."""
    ranks: Mapped[int | None] = mapped_column(default=None)
    """Ranks (one trace each) ingest read (None as for ``duration_s``)."""
    series_resolution_s: Mapped[float | None] = mapped_column(sa.Float, default=None)
    """The finest resolution the series retention left ``processed/series.npz`` at; None: full."""
    series_deleted_at: Mapped[datetime | None] = mapped_column(default=None)
    """When the series retention deleted the job's series (None: they are kept)."""
    captures: Mapped[list[Any] | None] = mapped_column(sa.JSON, default=None)
    """PyTorch-profiler captures asked of the running job (``records.jobs.capture_header``), oldest first."""


class WebhookScope(enum.StrEnum):
    domain = "domain"
    user = "user"
    job = "job"


class Webhook(Base):
    """An HTTPS endpoint told about a domain's, a user's or one job's events (docs/webhooks.md).

    ``user_id`` None: every job of the domain; ``job_id`` set: that job only. ``secret`` signs
    each body (HMAC-SHA256); it is shown once, when the webhook is created."""

    __tablename__ = "webhooks"
    __table_args__ = (sa.Index(None, "domain_id", "user_id"),)

    id: Mapped[str] = mapped_column(sa.String(36), primary_key=True, default=new_id)
    domain_id: Mapped[str] = mapped_column(sa.ForeignKey("domains.id", ondelete="CASCADE"))
    user_id: Mapped[str | None] = mapped_column(
        sa.ForeignKey("user_profiles.id", ondelete="CASCADE"), default=None
    )
    job_id: Mapped[str | None] = mapped_column(
        sa.ForeignKey("jobs.id", ondelete="CASCADE"), default=None, index=True
    )
    url: Mapped[str] = mapped_column(sa.String(2000))
    events: Mapped[list[str]] = mapped_column(default=list)
    secret: Mapped[str] = mapped_column(sa.String(100))
    note: Mapped[str] = mapped_column(sa.String(200), default="")
    created_by: Mapped[str] = mapped_column(sa.String(130))
    created_at: Mapped[datetime] = mapped_column(default=utcnow)

    @property
    def scope(self) -> WebhookScope:
        if self.job_id is not None:
            return WebhookScope.job
        return WebhookScope.domain if self.user_id is None else WebhookScope.user


class DeliveryStatus(enum.StrEnum):
    Pending = "Pending"
    Delivered = "Delivered"
    Failed = "Failed"


class WebhookDelivery(Base):
    """One event sent (or being sent) to one webhook; ``attempts`` logs every try."""

    __tablename__ = "webhook_deliveries"
    __table_args__ = (
        sa.Index(None, "webhook_id", "created_at"),
        sa.UniqueConstraint("webhook_id", "dedupe_key"),
    )

    id: Mapped[str] = mapped_column(sa.String(36), primary_key=True, default=new_id)
    webhook_id: Mapped[str] = mapped_column(sa.ForeignKey("webhooks.id", ondelete="CASCADE"))
    job_id: Mapped[str | None] = mapped_column(sa.String(36), default=None)
    event: Mapped[str] = mapped_column(sa.String(64))
    dedupe_key: Mapped[str | None] = mapped_column(sa.String(200), default=None)
    """The same key is delivered once per webhook (a distributed run's finding, seen on every
    rank's job: ``profilerhub_worker.ingest.actions``); None: no such limit."""
    payload: Mapped[dict[str, Any]] = mapped_column(default=dict)
    status: Mapped[DeliveryStatus] = mapped_column(_enum(DeliveryStatus), default=DeliveryStatus.Pending)
    attempts: Mapped[list[Any]] = mapped_column(sa.JSON, default=list)
    """``[{"at", "status_code", "error", "ms"}]``, one per try, oldest first."""
    next_attempt_at: Mapped[datetime | None] = mapped_column(default=None)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    finished_at: Mapped[datetime | None] = mapped_column(default=None)


__all__ = [
    "SYSTEM_DOMAIN",
    "ApiToken",
    "App",
    "AppStatus",
    "AppType",
    "AuditEvent",
    "Base",
    "Domain",
    "DeliveryStatus",
    "DomainStatus",
    "Job",
    "JobStatus",
    "ResourceTag",
    "Role",
    "TwoFactor",
    "UTCDateTime",
    "UserProfile",
    "Webhook",
    "WebhookDelivery",
    "WebhookScope",
    "new_id",
    "utcnow",
]
