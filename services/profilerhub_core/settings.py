"""ProfilerHub's settings: one object per process, built from ``PROFILERHUB_*`` environment variables.

Build it once at the edge (a CLI command, a test fixture) with ``Settings()`` (or
``Settings(home=..., ...)``) and pass it into factories such as ``create_app(settings)`` and
``make_engine(settings)``. Nothing reads settings from a module global at import time.

Adding a setting: add one annotated field with ``Field(default=..., description=...)`` below; the
environment variable ``PROFILERHUB_<FIELD_NAME>`` sets it. Settings derived from others (like the
default database in the home directory) are filled in ``_fill_derived``.
"""

from __future__ import annotations

import secrets
from pathlib import Path
from typing import Literal
from urllib.parse import urlsplit

from pydantic import Field, PrivateAttr, SecretStr, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from profilerhub_core.domain_settings import QUANTITY_PATTERN
from profilerhub_core.retention import SeriesRetention, parse_retention

# Values that mean "nobody chose a secret"; refused outside development.
PLACEHOLDER_SECRETS = frozenset(
    {"", "changeme", "change-me", "changethis", "secret", "admin", "password", "token"}
)
MIN_SECRET_LENGTH = 16


def _origin_setting(name: str, value: str) -> str:
    """``value`` as ``scheme://host[:port]`` (no path, lower case), or "" when unset."""
    value = value.strip().rstrip("/").lower()
    if not value:
        return ""
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.hostname or parts.path or parts.query:
        raise ValueError(f"{name} must be scheme://host[:port] with no path (e.g. https://apps.example.com)")
    default_port = {"http": 80, "https": 443}[parts.scheme]
    port = "" if parts.port in (None, default_port) else f":{parts.port}"  # as browsers send Origin
    return f"{parts.scheme}://{parts.hostname}{port}"


class Settings(BaseSettings):
    """Every setting of the hub, workers and CLI. Environment: ``PROFILERHUB_<NAME>``."""

    model_config = SettingsConfigDict(env_prefix="PROFILERHUB_", extra="ignore", validate_default=True)
    _signing_key: bytes | None = PrivateAttr(default=None)

    home: Path = Field(
        default_factory=lambda: Path.home() / ".profilerhub",
        description="Directory for the embedded database, local storage, the admin token and keys.",
    )
    environment: Literal["development", "production"] = Field(
        default="development",
        description="'production' refuses placeholder secrets and requires a secret key to be set.",
    )
    database_url: str = Field(
        default="",
        description="SQLAlchemy URL of the database. Default: SQLite file <home>/profilerhub.db. "
        "PostgreSQL: postgresql+psycopg://user:password@host:5432/dbname.",
    )
    storage_url: str = Field(
        default="",
        description="Where traces live: file:///absolute/dir (default file://<home>/storage) "
        "or s3://bucket/prefix for any S3-compatible store.",
    )
    s3_endpoint_url: str | None = Field(
        default=None, description="Endpoint of an S3-compatible store (MinIO, Ceph); unset for AWS S3."
    )
    admin_token: SecretStr | None = Field(
        default=None,
        description="The platform administrator's API token. Unset: generated on first start, printed "
        "once and written to <home>/admin-token (mode 0600).",
    )
    secret_key: SecretStr | None = Field(
        default=None,
        description="Key that signs pagination tokens and other short-lived values; every hub process "
        "must share it. Unset in development: generated once into <home>/secret-key.",
    )
    redis_url: str | None = Field(
        default=None,
        description="URL of a Redis server (redis://host:6379/0). Unset: `up` runs an embedded one.",
    )
    host: str = Field(default="127.0.0.1", description="Address the hub listens on.")
    port: int = Field(default=8080, ge=0, le=65535, description="Port the hub listens on.")
    public_url: str = Field(
        default="", description="URL users reach the hub at (behind a proxy). Default: http://<host>:<port>."
    )
    hub_internal_url: str = Field(
        default="",
        description="URL profiler apps reach the hub at, to ask which jobs their owner has "
        "(a cluster-internal Service URL on Kubernetes). Default: public_url.",
    )
    max_request_body_bytes: int = Field(
        default=1024 * 1024,
        ge=1024,
        description="Largest JSON request body the API accepts; larger gets 413.",
    )
    # -- jobs: uploads and ingest (issue 5) --
    job_max_file_bytes: int = Field(
        default=512 * 1024 * 1024, ge=1, description="Largest raw file a job may upload; larger gets 413."
    )
    job_max_total_bytes: int = Field(
        default=64 * 1024 * 1024 * 1024,
        ge=1,
        description="Largest total of one job's raw files (64 GiB: a 64-rank job of 1.5 GB traces, gzipped, "
        "is about 10 GB).",
    )
    job_max_trace_bytes: int = Field(
        default=0,
        ge=0,
        description="Largest raw file once decompressed (a larger one is left out of its job, named in "
        "its warnings); 0 = no cap: ingest's memory does not grow with a trace, its disk does.",
    )
    job_max_ingest_bytes: int = Field(
        default=0,
        ge=0,
        description="Largest total of one job's files once decompressed; 0 = no cap.",
    )
    job_max_inflate_ratio: float = Field(
        default=200.0,
        ge=0,
        description="Decompression-bomb guard: a gzip file that inflates to more than this many times "
        "the compressed bytes read so far (past its first 64 MiB) is left out as it streams, cap or "
        "not (real traces inflate 5-30 times); 0 = off.",
    )
    worker_ingest_memory_bytes: int = Field(
        default=0,
        ge=0,
        description="Memory one worker's concurrent ingests may hold together (each file reserves 1.5 "
        "times its decompressed size while it is parsed, at most job_ingest_trace_memory_bytes); 0 = half "
        "the memory limit of the worker's cgroup (a container's), else half the machine's memory.",
    )
    job_ingest_trace_memory_bytes: int = Field(
        default=1 << 30,
        ge=64 << 20,
        description="Memory (RSS, the worker process's own included) one trace's ingest may hold, whatever "
        "the trace's size: its column scratch files' pages are let go past it, a file reserves no more "
        "than this of worker_ingest_memory_bytes, and its measured peak is logged and recorded with the "
        "trace (a warning when over).",
    )
    job_presigned_uploads: bool = Field(
        default=True,
        description="On S3 storage, let the SDK upload straight to presigned URLs (false: through the hub).",
    )
    job_ingest_timeout_seconds: float = Field(
        default=900.0,
        gt=0,
        description="An ingest running longer is taken as dead: the job is ingested again (or Failed "
        "after job_ingest_max_attempts).",
    )
    rules_scan_interval_seconds: float = Field(
        default=60.0,
        ge=5,
        le=3600,
        description="How often the rules of a running job are evaluated on what it has streamed so far.",
    )
    trusted_proxies: list[str] = Field(
        default_factory=list,
        description="Addresses or networks (CIDR, JSON list: '[\"10.0.0.0/8\"]') of the reverse proxies "
        "in front of the hub. Only a request whose peer is one of them has its X-Forwarded-For read (the "
        "nearest address in it that is not a trusted proxy is the client's, for rate limits and audit). "
        "Empty (the default): X-Forwarded-For is ignored, whoever sends it.",
    )
    # -- webhooks (docs/webhooks.md) --
    webhook_allowed_networks: list[str] = Field(
        default_factory=list,
        description="Networks (CIDR, JSON list: '[\"10.1.0.0/16\"]') webhooks may call although they are "
        "not public: loopback, link-local, private and reserved addresses are refused unless listed here. "
        "Checked on every address the webhook's host resolves to, when it is created and at each delivery.",
    )
    webhook_timeout_seconds: float = Field(
        default=10.0, gt=0, le=60, description="How long one webhook delivery attempt may take."
    )
    webhook_max_attempts: int = Field(
        default=6, ge=1, le=20, description="Attempts per webhook delivery before it is Failed."
    )
    webhook_retry_backoff_seconds: float = Field(
        default=10.0,
        gt=0,
        le=3600,
        description="Wait before the first retry of a failed delivery; doubled for each further one "
        "(at most 1 hour), with jitter.",
    )
    job_ingest_max_attempts: int = Field(
        default=3, ge=1, description="Ingest attempts before a job is Failed."
    )
    job_ingest_heartbeat_seconds: float = Field(
        default=10.0,
        gt=0,
        description="How often a running ingest marks its job alive; a job unmarked for three times "
        "this (its worker died) is taken over at the next reconcile, without spending an attempt.",
    )
    job_ingest_fan_out: bool = Field(
        default=True,
        description="Ingest a job's traces as one task each, on any worker, joined by the task that "
        "claimed the job (which parses whatever no other worker has taken); off: one after another "
        "in that task. Needs Redis (redis_url).",
    )
    job_ingest_traces_per_job: int = Field(
        default=16,
        ge=1,
        description="Traces of one job parsed at once when its ingest fans out: the job's trace tasks are "
        "sent this many at a time, the next as one is done, so the queue never holds more of one job "
        "and other jobs' tasks are taken between its traces.",
    )
    job_ingest_jobs_per_user: int = Field(
        default=2,
        ge=0,
        description="Jobs of one user ingested at once; that user's further completed jobs wait (InProgress, "
        "completed) and start as one of theirs ends, so one user's many jobs cannot hold every worker. "
        "0 = no limit.",
    )
    job_ingest_max_takeovers: int = Field(
        default=10,
        ge=1,
        description="Takeovers from a worker that died mid-ingest before the job is Failed (a job "
        "that kills every worker reading it).",
    )
    default_page_size: int = Field(
        default=50, ge=1, description="Items per page when a list request gives no limit."
    )
    max_page_size: int = Field(default=1000, ge=1, description="Largest `limit` a list request may ask for.")
    db_pool_size: int = Field(
        default=10, ge=1, description="Database connections each hub process keeps open."
    )
    token_touch_seconds: int = Field(
        default=60,
        ge=0,
        description="A token's last_used_at is written at most this often (saves a write per request).",
    )
    token_cache_seconds: float = Field(
        default=1.0,
        ge=0,
        le=60,
        description="Each hub process trusts a verified token this long without a lookup; a change "
        "made through another hub process (a revoked token, a new role) shows after at most this "
        "delay, one made through the same process at once. 0 = look up every request.",
    )
    log_level: str = Field(default="info", description="Log level of the hub (debug, info, warning, error).")
    access_log: bool = Field(
        default=False,
        description="Log one line per HTTP request (off by default: it costs about a tenth of a "
        "simple request's CPU; the audit log records every change).",
    )
    hub_workers: int = Field(
        default=0, ge=0, le=64, description="Hub server processes; 0 = one per CPU core, at most 4."
    )

    # -- OpenID Connect sign-in (docs/operations.md#openid-connect-sign-in) --
    oidc_issuer: str = Field(
        default="",
        description="Issuer URL of an OpenID Connect provider (its /.well-known/openid-configuration is "
        "read). Empty: no 'Sign in with …' on the sign-in page.",
    )
    oidc_client_id: str = Field(default="", description="The hub's client id at the OpenID provider.")
    oidc_client_secret: SecretStr | None = Field(
        default=None,
        description="The hub's client secret at the provider (unset: a public client, PKCE only).",
    )
    oidc_provider_name: str = Field(
        default="", description="Shown as 'Sign in with <name>'. Default: the issuer's host name."
    )
    oidc_scopes: str = Field(default="openid profile email", description="Scopes asked for at sign-in.")
    oidc_username_claim: str = Field(
        default="preferred_username",
        description="ID-token claim that is the user profile's name (must be a valid ProfilerHub name).",
    )
    oidc_domain_claim: str = Field(
        default="",
        description="ID-token claim (a string or a list of strings, e.g. 'groups') whose value picks the "
        "user's domain through oidc_domain_map. Empty: every user goes to oidc_default_domain.",
    )
    oidc_domain_map: dict[str, str] = Field(
        default_factory=dict,
        description='JSON object from a value of oidc_domain_claim to a domain name, e.g. {"ml-team": "ml"}.',
    )
    oidc_default_domain: str = Field(
        default="",
        description="Domain of users whose domain claim maps to none (empty: such users are refused).",
    )
    oidc_leeway_seconds: int = Field(
        default=60, ge=0, le=600, description="Clock skew allowed on an ID token's exp/iat/nbf."
    )

    # -- local accounts (docs/console.md#local-accounts) --
    local_accounts: bool | None = Field(
        default=None,
        description="Local accounts: administrators invite users, who sign in with a name and "
        "password. Unset: on, unless an OpenID provider is configured (oidc_issuer).",
    )
    invitation_days: float = Field(
        default=7.0, gt=0, le=90, description="Days an invitation link stays usable (once)."
    )
    password_min_length: int = Field(
        default=12, ge=8, le=128, description="Fewest characters a local account's password may have."
    )

    # -- rate limits (docs/operations.md#rate-limits) --
    rate_limit_window_seconds: int = Field(
        default=60, ge=1, le=3600, description="Length of the window each rate limit counts in."
    )
    rate_limit_signin: int = Field(
        default=20,
        ge=0,
        description="Sign-in attempts (token form, OpenID callback) per client address "
        "per window; 0 = unlimited.",
    )
    rate_limit_presigned: int = Field(
        default=30,
        ge=0,
        description="Presigned-link redemptions per client address per window; 0 = unlimited.",
    )
    rate_limit_password_failures_account: int = Field(
        default=10,
        ge=0,
        description="Wrong passwords for one account per window before password sign-ins to that "
        "account are refused with 429 until the window ends (other accounts, tokens and sessions "
        "are not affected); 0 = unlimited.",
    )
    rate_limit_password_failures_address: int = Field(
        default=50,
        ge=0,
        description="Wrong passwords from one client address per window before password sign-ins "
        "from it are refused with 429 until the window ends; 0 = unlimited.",
    )
    rate_limit_token_failures: int = Field(
        default=30,
        ge=0,
        description="Failed API-token checks per client address per window before every "
        "token from it is refused with 429 until the window ends; 0 = unlimited.",
    )

    # -- the SageMaker-compatible endpoint /sagemaker (issue 13) --
    sagemaker_region: str = Field(
        default="us-east-1",
        pattern=r"^[a-z0-9-]{1,32}$",
        description="The region written into the ARNs the /sagemaker endpoint answers with (requests "
        "signed for any region are accepted).",
    )
    sagemaker_account_id: str = Field(
        default="000000000000",
        pattern=r"^[0-9]{12}$",
        description="The 12-digit account id written into the ARNs the /sagemaker endpoint answers with.",
    )
    sagemaker_clock_skew_seconds: int = Field(
        default=300,
        ge=1,
        le=3600,
        description="How far a SigV4-signed request's X-Amz-Date may be from the hub's clock.",
    )

    @property
    def series_retention_policy(self) -> SeriesRetention:
        """``series_retention`` parsed (checked when the settings load)."""
        return parse_retention(self.series_retention)

    @model_validator(mode="after")
    def _check_series_retention(self) -> Settings:
        try:
            parse_retention(self.series_retention)
        except ValueError as exc:
            raise ValueError(f"PROFILERHUB_SERIES_RETENTION {self.series_retention!r}: {exc}") from exc
        return self

    @model_validator(mode="after")
    def _check_webhook_networks(self) -> Settings:
        import ipaddress

        for name in ("webhook_allowed_networks", "trusted_proxies"):
            for net in getattr(self, name):
                try:
                    ipaddress.ip_network(net, strict=False)
                except ValueError as exc:
                    raise ValueError(f"{name}: {net!r} is not a network ({exc})") from exc
        return self

    @property
    def effective_hub_workers(self) -> int:
        import os

        return self.hub_workers or max(1, min(4, os.cpu_count() or 1))

    # -- apps: spawner, workers, proxy (issue 3) --
    spawner: str = Field(
        default="local",
        description="How apps run: 'local' (a process on the worker's machine), 'kubernetes' (a "
        "Deployment + Service per app, see the k8s_* settings) or 'module:Class' of a Spawner subclass.",
    )
    app_start_timeout: float = Field(default=30.0, gt=0, description="Seconds for an app instance to start.")
    app_http_timeout: float = Field(
        default=30.0, gt=0, description="Seconds from an app starting to its health endpoint answering."
    )
    app_stop_grace: float = Field(
        default=5.0, ge=0, description="Seconds between SIGTERM and SIGKILL when an app is stopped."
    )
    app_token_private_key: SecretStr | None = Field(
        default=None,
        description="PEM of the Ed25519 key that signs app tokens; every hub and worker must share it. "
        "Unset: generated once into <home>/app-token-key.pem (mode 0600).",
    )
    app_token_ttl: int = Field(
        default=60, ge=5, description="Seconds the token minted for each proxied request is valid."
    )
    app_subdomain_host: str = Field(
        default="",
        description="Serve each app on an origin of its own: <scheme>://<app id>.<host>, for this "
        "scheme://host[:port] (e.g. https://apps.example.com; needs a wildcard DNS record and "
        "certificate, docs/console.md). Unset: apps are served under the hub's own origin, /apps/<id>/.",
    )
    app_session_hours: float = Field(
        default=12.0, gt=0, description="Hours an app's browser session cookie (from a presigned URL) lasts."
    )
    console_session_hours: float = Field(
        default=12.0, gt=0, le=24 * 30, description="Hours a console sign-in with a pasted token lasts."
    )
    activity_write_seconds: float = Field(
        default=30.0, ge=0, description="An app's last_activity_at is written at most this often per app."
    )
    celery_queue: str = Field(
        default="profilerhub-apps",
        pattern=r"^[A-Za-z0-9_.-]{1,100}$",
        description="Queue (and Redis key prefix) of the app tasks; each installation sharing a Redis "
        "needs its own.",
    )
    worker_concurrency: int = Field(
        default=16, ge=1, description="App tasks one worker runs at once (threads)."
    )
    reconcile_seconds: float = Field(default=15.0, gt=0, description="How often the reconciler runs.")
    app_poll_seconds: float = Field(
        default=1.0, gt=0, description="How often running apps are polled (a dead app becomes Failed)."
    )
    cull_seconds: float = Field(default=60.0, gt=0, description="How often idle apps are looked for.")
    storage_sweep_seconds: float = Field(
        default=3600.0,
        gt=0,
        description="How often storage is swept for objects of deleted jobs, users and domains.",
    )
    series_retention: str = Field(
        default="",
        description="How long a job's series (what the metrics API and the rules read) are kept, at which "
        "resolution, counted from the job's completion: tiers RESOLUTION:UNTIL, finest first, e.g. "
        "'full:15d,60s:63d,1h:455d' (CloudWatch's), then deleted; 'forever' as the last UNTIL keeps the "
        "last tier. Empty: full resolution for as long as the job exists.",
    )
    series_retention_seconds: float = Field(
        default=3600.0,
        gt=0,
        description="How often jobs' series are rolled up or deleted by series_retention.",
    )
    app_resend_seconds: float = Field(
        default=10.0, gt=0, description="A Pending or Deleting app no worker holds is re-sent after this."
    )

    # -- the Kubernetes spawner (PROFILERHUB_SPAWNER=kubernetes; issue 11) --
    k8s_api_url: str = Field(
        default="",
        description="URL of the Kubernetes API server. Empty: the pod's service account (in-cluster), "
        "else ~/.kube/config.",
    )
    k8s_namespace: str = Field(
        default="default",
        pattern=r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$",
        description="Namespace the app Deployments and Services are created in.",
    )
    k8s_release: str = Field(
        default="profilerhub",
        pattern=r"^[a-z0-9]([-a-z0-9]{0,51}[a-z0-9])?$",
        description="This installation's name (the Helm release): the app.kubernetes.io/instance label "
        "of its apps, so two installations in one namespace never sweep each other's.",
    )
    k8s_app_image: str = Field(
        default="", description="Image of the app pods (the ProfilerHub image); required for kubernetes."
    )
    k8s_image_pull_policy: Literal["Always", "IfNotPresent", "Never"] = Field(
        default="IfNotPresent", description="imagePullPolicy of the app pods."
    )
    k8s_app_service_account: str = Field(
        default="",
        description="Service account of the app pods (empty: the namespace's default; "
        "its token is never mounted).",
    )
    k8s_app_cpu_request: str = Field(
        pattern=QUANTITY_PATTERN, default="100m", description="CPU request of each app pod."
    )
    k8s_app_memory_request: str = Field(
        pattern=QUANTITY_PATTERN, default="256Mi", description="Memory request of each app pod."
    )
    k8s_app_cpu_limit: str = Field(
        pattern=QUANTITY_PATTERN, default="1", description="CPU limit of each app pod (empty: none)."
    )
    k8s_app_memory_limit: str = Field(
        pattern=QUANTITY_PATTERN, default="1Gi", description="Memory limit of each app pod (empty: none)."
    )
    k8s_app_storage_secret: str = Field(
        default="",
        description="Secret whose AWS_* keys become the app pods' storage credentials (empty: none; the "
        "worker's own credentials are never copied into a pod spec).",
    )
    k8s_app_storage_secret_template: str = Field(
        default="",
        description="Per-owner storage credentials: the name of the Secret each app pod reads its AWS_* keys "
        "from, with {domain_id} and {user_id} filled in (e.g. 'ph-storage-{user_id}'; ids, never names, "
        "which are reused after a delete). "
        "The operator creates one such Secret per user, with credentials that can read only "
        "that user's prefix; a missing Secret keeps the app from starting. Overrides k8s_app_storage_secret.",
    )
    k8s_api_retries: int = Field(
        default=5, ge=1, description="Attempts of one Kubernetes API call answered 429/5xx or unreachable."
    )

    @model_validator(mode="after")
    def _fill_derived(self) -> Settings:
        self.home = self.home.expanduser().resolve()
        if not self.database_url:
            self.database_url = f"sqlite:///{self.home / 'profilerhub.db'}"
        if not self.storage_url:
            self.storage_url = (self.home / "storage").as_uri()
        if not self.public_url:
            self.public_url = f"http://{self.host}:{self.port}"
        self.public_url = self.public_url.rstrip("/")
        self.app_subdomain_host = _origin_setting("PROFILERHUB_APP_SUBDOMAIN_HOST", self.app_subdomain_host)
        apps_host, hub_host = urlsplit(self.app_subdomain_host).hostname, urlsplit(self.public_url).hostname
        if apps_host and hub_host and hub_host.endswith("." + apps_host):
            raise ValueError(
                f"PROFILERHUB_APP_SUBDOMAIN_HOST ({apps_host}) must not be a parent of the hub's own host "
                f"({hub_host}): every request to the hub would be taken for an app's"
            )
        if self.default_page_size > self.max_page_size:
            raise ValueError("default_page_size must not exceed max_page_size")
        if self.k8s_app_storage_secret_template:
            fields = dict.fromkeys(("domain_id", "user_id"), "x")
            try:
                self.k8s_app_storage_secret_template.format(**fields)
            except (KeyError, IndexError, ValueError) as exc:
                raise ValueError(
                    f"PROFILERHUB_K8S_APP_STORAGE_SECRET_TEMPLATE {self.k8s_app_storage_secret_template!r} "
                    f"does not format ({exc!r}); use only the fields {{domain_id}} and {{user_id}} (names "
                    "are reused after a delete: a new user of the same name would get the old one's Secret)"
                ) from None
        if self.spawner == "kubernetes" and not self.k8s_app_image:
            raise ValueError("PROFILERHUB_K8S_APP_IMAGE must be set when PROFILERHUB_SPAWNER=kubernetes")
        if self.oidc_issuer and not self.oidc_client_id:
            raise ValueError("PROFILERHUB_OIDC_CLIENT_ID must be set with PROFILERHUB_OIDC_ISSUER")
        if self.environment != "development":
            self._refuse_placeholders()
        return self

    def _refuse_placeholders(self) -> None:
        if self.secret_key is None:
            raise ValueError("PROFILERHUB_SECRET_KEY must be set when PROFILERHUB_ENVIRONMENT=production")
        for name in ("secret_key", "admin_token"):
            value: SecretStr | None = getattr(self, name)
            if value is None:
                continue
            raw = value.get_secret_value()
            if raw.lower() in PLACEHOLDER_SECRETS or len(raw) < MIN_SECRET_LENGTH:
                raise ValueError(
                    f"PROFILERHUB_{name.upper()} is a placeholder or shorter than {MIN_SECRET_LENGTH} "
                    "characters; set a random value (e.g. `openssl rand -hex 32`)"
                )

    @property
    def local_accounts_enabled(self) -> bool:
        """``local_accounts``, or when unset: on unless an OpenID provider is configured."""
        return self.local_accounts if self.local_accounts is not None else not self.oidc_issuer

    @property
    def is_sqlite(self) -> bool:
        return self.database_url.startswith("sqlite")

    def signing_key(self) -> bytes:
        """The secret key, generating and keeping ``<home>/secret-key`` when none is configured."""
        if self._signing_key is None:
            if self.secret_key is not None:
                self._signing_key = self.secret_key.get_secret_value().encode()
            else:
                path = self.home / "secret-key"
                if not path.exists():
                    self.home.mkdir(parents=True, exist_ok=True)
                    write_private_file(path, secrets.token_hex(32))
                self._signing_key = path.read_text().strip().encode()
        return self._signing_key


def write_private_file(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` readable by its owner only (mode 0600), replacing it atomically."""
    import os

    tmp = path.with_name(f".{path.name}.{secrets.token_hex(4)}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as handle:
        handle.write(text)
    os.replace(tmp, path)


__all__ = ["Settings", "write_private_file"]
