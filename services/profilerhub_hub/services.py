"""What one hub process is wired from: :class:`HubServices`, built once by ``create_app``.

Everything a route, a dependency or a door needs beyond its request is a typed field here, made
before the first request: the settings, the database (``engine``, ``sessions``, ``inline_reads``),
what hub processes share through Redis (``redis``, ``token_cache``, ``rate_limits``:
``profilerhub_hub.shared``), the task sender, the app-token key, the OpenID Connect client and the
object store. Nothing is set on ``app.state`` but this one object (``app.state.services``); code
reaches it through :func:`services`. The store and the app-token key alone are opened on first use,
inside this object (opening an S3 store imports boto3, the key ``joserfc`` and ``cryptography``:
the hub's start need not wait for them).

Tests replace a part by assigning the field (``services.app_tasks = SentTasks()``).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from sqlalchemy.engine import Engine
from sqlalchemy.orm import Session, sessionmaker
from starlette.requests import HTTPConnection

from profilerhub_core.db.session import reads_are_local, serialize_writes, session_factory
from profilerhub_core.jobstorage import open_job_store
from profilerhub_core.settings import Settings
from profilerhub_core.storage import ObjectStore
from profilerhub_core.storage.observed import observed
from profilerhub_hub.console.oidc import OpenIDClient
from profilerhub_hub.ratelimit import RateLimits
from profilerhub_hub.shared import shared_key, shared_redis
from profilerhub_hub.tasks import TaskSender
from profilerhub_hub.tokencache import SharedEpoch, TokenCache

if TYPE_CHECKING:
    from joserfc.jwk import OKPKey


class SendsTasks(Protocol):
    """What sends a task to the workers (``TaskSender``; tests record instead)."""

    def send(self, task_name: str, app_id: str, /) -> None: ...


@dataclass
class HubServices:
    """The hub's parts (see the module docstring)."""

    settings: Settings
    engine: Engine
    sessions: sessionmaker[Session]
    inline_reads: bool
    """SQLite: reads run on the event loop, writes serialized (``deps.session``)."""
    redis: Any | None
    token_cache: TokenCache
    rate_limits: RateLimits
    app_tasks: SendsTasks
    oidc: OpenIDClient | None
    _storage: ObjectStore | None = field(default=None, repr=False)
    _storage_lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    _app_token_key: OKPKey | None = field(default=None, repr=False)

    @classmethod
    def build(cls, settings: Settings, engine: Engine) -> HubServices:
        sessions = session_factory(engine)
        inline_reads = reads_are_local(engine)
        if inline_reads:
            serialize_writes(sessions)
        redis = shared_redis(settings)
        token_cache = TokenCache(
            settings.token_cache_seconds, SharedEpoch(redis, shared_key(settings, "token-epoch"))
        )
        token_cache.invalidate_on_write(sessions)
        return cls(
            settings=settings,
            engine=engine,
            sessions=sessions,
            inline_reads=inline_reads,
            redis=redis,
            token_cache=token_cache,
            rate_limits=RateLimits(settings, redis, sessions),
            app_tasks=TaskSender(settings),
            oidc=OpenIDClient(settings) if settings.oidc_issuer else None,
        )

    @property
    def app_token_key(self) -> OKPKey:
        """The key that signs app tokens (and checks the ones apps send back), read (made on the
        very first start) when first needed: the first request to an app."""
        with self._storage_lock:
            if self._app_token_key is None:
                from profilerhub_core.apptokens import hub_signing_key

                self._app_token_key = hub_signing_key(self.settings)
            return self._app_token_key

    @property
    def storage(self) -> ObjectStore:
        """The hub's object store, opened on first use; its outages are logged as two lines, not
        one per failed request (``storage.observed``)."""
        with self._storage_lock:
            if self._storage is None:
                self._storage = observed(open_job_store(self.settings))
            return self._storage

    @storage.setter
    def storage(self, store: ObjectStore) -> None:
        with self._storage_lock:
            self._storage = store


def services(connection: HTTPConnection) -> HubServices:
    """The hub's parts, as ``create_app`` built them."""
    built: HubServices = connection.app.state.services
    return built


__all__ = ["HubServices", "SendsTasks", "services"]
