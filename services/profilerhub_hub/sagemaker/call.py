"""One SageMaker request as the operations see it: :class:`Call` (who asks, for what, the door onto
the use cases, and the lookups every operation shares). Below ``operations``, ``tagging``,
``training_jobs`` and ``cloudwatch``, which all take one."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import sqlalchemy as sa
from sqlalchemy.orm import InstrumentedAttribute, Session

from profilerhub_core.db.models import App, AppType, Domain
from profilerhub_core.errors import NotFound
from profilerhub_core.names import is_valid_name
from profilerhub_core.pagination import paginate
from profilerhub_core.records import apps, users
from profilerhub_core.settings import Settings
from profilerhub_hub.deps.targets import (
    Resolved,
    authorize_resolved,
    owner_target,
    resolved_domain,
    resolved_user,
)
from profilerhub_hub.permissions import Action, Caller, Target
from profilerhub_hub.sagemaker.errors import validation
from profilerhub_hub.sagemaker.model import Arns, domain_uuid
from profilerhub_hub.usecases import Door

_MAX_RESULTS = 100  # SageMaker's own maximum for MaxResults


@dataclass(frozen=True, slots=True)
class Call:
    """One SageMaker request: who asks, for what, and the door onto the use cases."""

    door: Door
    caller: Caller
    params: dict[str, Any]

    @property
    def session(self) -> Session:
        return self.door.session

    @property
    def settings(self) -> Settings:
        return self.door.settings

    @property
    def arns(self) -> Arns:
        return Arns.of(self.settings)

    def hub(self) -> Resolved:
        return Resolved(self.caller, Target())

    def own_target(self) -> Resolved:
        """The caller themself as the target (a listing of what they may see, like REST's
        ``…/users/{me}/jobs``: ``authorize`` then checks the key's scopes)."""
        target = Target(domain_id=self.caller.domain_id, owner_id=self.caller.user_id)
        return Resolved(self.caller, target)

    def domain(self, key: str = "DomainId") -> Resolved:
        """The domain named by ``params[key]``, looked up and hidden like the REST API's."""
        missing = domain_missing(self.params[key])
        raw = domain_uuid(self.params[key])
        domain = self.session.get(Domain, raw) if raw is not None else None
        if domain is None:
            raise missing
        return resolved_domain(self.caller, domain, missing)

    def user(self) -> Resolved:
        name, raw = self._user_name(), domain_uuid(self.params["DomainId"])
        user = users.get_user_in_domain(self.session, raw, name) if raw and is_valid_name(name) else None
        if user is None:  # the common case in one query, as in REST's resolve
            raise self._user_missing(name)
        return resolved_user(self.caller, user, domain_missing(self.params["DomainId"]))

    def user_app(self, action: Action) -> tuple[Resolved, apps.UserApp, apps.AppValues]:
        """The target user, allowed ``action``, and their app ``AppType``/``AppName`` (the live
        one, else the last deleted), found by one query as plain values (for reads)."""
        app_type, name = app_type_of(self), self._user_name()
        raw, app_name = domain_uuid(self.params["DomainId"]), self.params["AppName"]
        found = None
        if raw and is_valid_name(name):
            found = apps.get_user_app(self.session, raw, name, app_type, app_name)
        if found is None:
            raise self._user_missing(name)
        missing = domain_missing(self.params["DomainId"])
        target = owner_target(self.caller, found.domain_id, found.domain_name, found.user_id, name, missing)
        allowed = self.allowed(Resolved(self.caller, target), action)
        if found.app is None:
            raise apps.app_not_found(name, app_type, app_name)
        return allowed, found, found.app

    def _user_name(self) -> str:
        name: str | None = self.params.get("UserProfileName")
        if self.params.get("SpaceName"):
            raise validation("Spaces are not supported by ProfilerHub; give UserProfileName")
        if not name:
            raise validation("UserProfileName is required (ProfilerHub apps belong to user profiles)")
        return name

    def _user_missing(self, name: str) -> NotFound:
        domain = self.domain().domain  # raises when the domain is missing or hidden
        assert domain is not None
        return users.user_not_found(domain.name, name)

    def allowed(self, resolved: Resolved, action: Action) -> Resolved:
        return authorize_resolved(self.session, resolved, action)

    def with_params(self, **params: Any) -> Call:
        """The same request with ``params`` standing in for members of its own (an ARN's parts)."""
        return replace(self, params=self.params | params)

    def the_app(self, target: Resolved) -> App:
        """The app ``AppType``/``AppName`` of the target user (the live one, else the last deleted)."""
        assert target.user is not None
        return apps.require_app(self.session, target.user, app_type_of(self), self.params["AppName"])

    def page(
        self,
        stmt: sa.Select[Any],
        order: Sequence[InstrumentedAttribute[Any]],
        scope: str,
        *,
        descending: bool | None = None,
    ) -> tuple[list[Any], str | None]:
        limit = self.params.get("MaxResults") or min(self.settings.default_page_size, _MAX_RESULTS)
        if descending is None:
            descending = self.params.get("SortOrder", "Descending") == "Descending"
        result = paginate(
            self.session,
            stmt,
            order,
            limit=limit,
            next_token=self.params.get("NextToken") or None,
            key=self.settings.signing_key(),
            scope=f"sagemaker:{scope}:{descending}",
            descending=descending,
        )
        return list(result.items), result.next_token


def domain_missing(sagemaker_id: str) -> NotFound:
    return NotFound(f"Domain '{sagemaker_id[:80]}' not found")


def app_type_of(call: Call) -> AppType:
    try:
        return AppType(call.params["AppType"])
    except ValueError:
        supported = ", ".join(t.value for t in AppType)
        raise validation(
            f"AppType '{call.params['AppType']}' is not supported by ProfilerHub ({supported})"
        ) from None


__all__ = ["Call", "app_type_of", "domain_missing"]
