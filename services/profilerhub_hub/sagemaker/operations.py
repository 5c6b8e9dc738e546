"""The SageMaker operations: each translates, then calls the use case the REST route calls.

Every operation finds its target through ``deps.targets.resolve`` (the REST API's lookup, so a
hidden resource answers exactly like a missing one), asks ``authorize_resolved`` for the same
``Action`` the REST route declares, and calls the same use case (``profilerhub_hub.usecases``):
it changes the records, writes the operation's one audit row (``via: sagemaker``), commits and
enqueues worker tasks after the commit. Only the names differ: a SageMaker ``DomainId``
(``d-<uuid hex>``) instead of the domain's name, SageMaker's field names and ARNs in the answer.

``OPERATIONS`` maps each supported ``X-Amz-Target`` operation to its function; the endpoint
answers any other operation of SageMaker's model with ``UnknownOperationException``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import sqlalchemy as sa
from sqlalchemy.orm import Session

from profilerhub_core.db.models import App, AppStatus, AppType, Domain, Role, UserProfile
from profilerhub_core.errors import AccessDenied, NotFound
from profilerhub_core.names import is_valid_name
from profilerhub_core.records import apps, domains
from profilerhub_hub.app_schemas import DEFAULT_PRESIGNED_SECONDS
from profilerhub_hub.deps.targets import (
    resolve,
)
from profilerhub_hub.permissions import Action, visible_domain
from profilerhub_hub.sagemaker import tagging, training_jobs
from profilerhub_hub.sagemaker.call import Call, app_type_of
from profilerhub_hub.sagemaker.errors import validation
from profilerhub_hub.sagemaker.model import domain_id, epoch
from profilerhub_hub.usecases import apps as app_cases
from profilerhub_hub.usecases import domains as domain_cases
from profilerhub_hub.usecases import users as user_cases


def _named(name: str, what: str) -> str:
    if not is_valid_name(name):
        raise validation(f"{what} '{name[:80]}' must match [a-zA-Z0-9](-*[a-zA-Z0-9]){{0,62}}")
    return name


def _page_answer(key: str, items: list[dict[str, Any]], next_token: str | None) -> dict[str, Any]:
    answer: dict[str, Any] = {key: items}
    if next_token:
        answer["NextToken"] = next_token
    return answer


def _clean(answer: dict[str, Any]) -> dict[str, Any]:
    """Leave out members without a value (the JSON protocol omits them, botocore expects that)."""
    return {k: v for k, v in answer.items() if v is not None}


# --------------------------------------------------------------------------- domains


# Members accepted, stored and answered back, with no ProfilerHub meaning (docs/sagemaker-api.md).
_DOMAIN_ECHO = (
    "AuthMode", "DefaultUserSettings", "DomainSettings", "SubnetIds", "VpcId", "AppNetworkAccessType",
    "HomeEfsFileSystemKmsKeyId", "KmsKeyId", "AppSecurityGroupManagement", "TagPropagation",
    "DefaultSpaceSettings",
)  # fmt: skip
_DOMAIN_UPDATE_ECHO = (
    "DefaultUserSettings", "SubnetIds", "AppNetworkAccessType", "AppSecurityGroupManagement",
    "TagPropagation", "DefaultSpaceSettings",
)  # fmt: skip


def _echoed(params: dict[str, Any], names: Sequence[str]) -> dict[str, Any]:
    # Empty lists stay out: the output shapes want at least one subnet when SubnetIds is present.
    return {k: params[k] for k in names if k in params and params[k] != []}


def _domain_details(call: Call, domain: Domain) -> dict[str, Any]:
    return {
        "DomainArn": call.arns.domain(domain),
        "DomainId": domain_id(domain),
        "DomainName": domain.name,
        "Status": domain.status.value,
        "CreationTime": epoch(domain.created_at),
        "LastModifiedTime": epoch(domain.updated_at),
        "Url": call.settings.public_url,
    }


def create_domain(call: Call) -> dict[str, Any]:
    target = call.allowed(call.hub(), Action.CreateDomain)
    name = _named(call.params["DomainName"], "DomainName")
    domain = domain_cases.create_domain(
        call.door,
        target,
        name,
        aws_fields=_echoed(call.params, _DOMAIN_ECHO),
        tags_given=tagging.new_tags(call),
    )
    return {
        "DomainArn": call.arns.domain(domain),
        "DomainId": domain_id(domain),
        "Url": call.settings.public_url,
    }


def describe_domain(call: Call) -> dict[str, Any]:
    target = call.allowed(call.domain(), Action.DescribeDomain)
    assert target.domain is not None
    return (
        {"AuthMode": "IAM", "DefaultUserSettings": {}}
        | domains.aws_fields(target.domain)
        | _domain_details(call, target.domain)
    )


def list_domains(call: Call) -> dict[str, Any]:
    target = call.allowed(call.hub(), Action.ListDomains)
    stmt = domains.domains_query(visible_domain(target.caller))
    rows, token = call.page(stmt, [Domain.created_at, Domain.id], "domains")
    return _page_answer("Domains", [_domain_details(call, d) for d in rows], token)


def update_domain(call: Call) -> dict[str, Any]:
    """Stored, echoed and audited; none of SageMaker's domain settings has a ProfilerHub meaning."""
    target = call.allowed(call.domain(), Action.UpdateDomain)
    stored = _echoed(call.params, _DOMAIN_UPDATE_ECHO)
    domain = domain_cases.update_domain(call.door, target, {}, aws_fields=stored)
    return {"DomainArn": call.arns.domain(domain)}


def delete_domain(call: Call) -> dict[str, Any]:
    domain_cases.delete_domain(call.door, call.allowed(call.domain(), Action.DeleteDomain))
    return {}


# --------------------------------------------------------------------------- user profiles


def _user_details(call: Call, user: UserProfile) -> dict[str, Any]:
    return {
        "DomainId": domain_id(user.domain_id),
        "UserProfileName": user.name,
        "Status": "InService",
        "CreationTime": epoch(user.created_at),
        "LastModifiedTime": epoch(user.updated_at or user.created_at),
    }


def _landing_app_type(uri: str) -> AppType | None:
    """The app type a SageMaker landing URI points at (``app:TensorBoard:`` …), None for Studio's."""
    if uri.startswith("studio::"):
        return None
    kind, _, rest = uri.partition(":")
    app_type = rest.partition(":")[0]
    if kind != "app" or app_type not in AppType.__members__:
        supported = ", ".join(f"app:{t.value}:" for t in AppType)
        raise validation(f"Landing URI '{uri[:80]}' is not one of ProfilerHub's ({supported}, studio::)")
    return AppType(app_type)


def _user_settings(call: Call) -> dict[str, Any]:
    """The given ``UserSettings``, after checking the one member ProfilerHub reads."""
    settings: dict[str, Any] = call.params.get("UserSettings") or {}
    if "DefaultLandingUri" in settings:
        _landing_app_type(settings["DefaultLandingUri"])
    return settings


def create_user_profile(call: Call) -> dict[str, Any]:
    target = call.allowed(call.domain(), Action.CreateUserProfile)
    assert target.domain is not None
    name = _named(call.params["UserProfileName"], "UserProfileName")
    given = tagging.new_tags(call)
    role = tagging.role_of(given) or Role.user
    settings = _user_settings(call)
    user = user_cases.create_user(call.door, target, name, role, aws_settings=settings, tags_given=given)
    return {"UserProfileArn": call.arns.user(target.domain, user.name)}


def describe_user_profile(call: Call) -> dict[str, Any]:
    target = call.allowed(call.user(), Action.DescribeUserProfile)
    assert target.user is not None and target.domain is not None
    return _user_details(call, target.user) | {
        "UserProfileArn": call.arns.user(target.domain, target.user.name),
        "UserSettings": target.user.aws_settings or {},
    }


def list_user_profiles(call: Call) -> dict[str, Any]:
    if call.params.get("DomainIdEquals"):
        target = call.allowed(call.domain("DomainIdEquals"), Action.ListUserProfiles)
        assert target.domain is not None
        scope_domain: str | None = target.domain.id
    else:
        target = call.allowed(call.hub(), Action.ListUserProfiles)
        scope_domain = visible_domain(target.caller)
    stmt = sa.select(UserProfile)
    if scope_domain is not None:
        stmt = stmt.where(UserProfile.domain_id == scope_domain)
    contains = call.params.get("UserProfileNameContains")
    if contains:
        stmt = stmt.where(UserProfile.name.contains(contains, autoescape=True))
    # SortBy CreationTime or LastModifiedTime: both by creation time (paging needs a stable key).
    order = [UserProfile.created_at, UserProfile.id]
    rows, token = call.page(stmt, order, f"users:{scope_domain}:{contains}")
    return _page_answer("UserProfiles", [_user_details(call, u) for u in rows], token)


def update_user_profile(call: Call) -> dict[str, Any]:
    """Replace the given members of the profile's ``UserSettings`` (stored, echoed by
    DescribeUserProfile; ``DefaultLandingUri`` picks the app CreatePresignedDomainUrl signs into)."""
    target = call.allowed(call.user(), Action.UpdateUserProfile)
    assert target.domain is not None
    user = user_cases.update_user(call.door, target, aws_settings=_user_settings(call))
    return {"UserProfileArn": call.arns.user(target.domain, user.name)}


def delete_user_profile(call: Call) -> dict[str, Any]:
    user_cases.delete_user(call.door, call.allowed(call.user(), Action.DeleteUserProfile))
    return {}


# --------------------------------------------------------------------------- apps


def _app_details(call: Call, app: App | apps.AppValues, user_name: str) -> dict[str, Any]:
    return {
        "DomainId": domain_id(app.domain_id),
        "UserProfileName": user_name,
        "AppType": app.app_type.value,
        "AppName": app.app_name,
        "Status": app.status.value,
        "CreationTime": epoch(app.created_at),
    }


def create_app(call: Call) -> dict[str, Any]:
    target = call.allowed(call.user(), Action.CreateApp)
    assert target.domain is not None and target.user is not None
    name = _named(call.params["AppName"], "AppName")
    app = app_cases.create_app(call.door, target, app_type_of(call), name, tags_given=tagging.new_tags(call))
    return {"AppArn": call.arns.app(app, target.user.name)}


def describe_app(call: Call) -> dict[str, Any]:
    _, found, app = call.user_app(Action.DescribeApp)
    return _clean(
        _app_details(call, app, found.user_name)
        | {
            "AppArn": call.arns.app(app, found.user_name),
            "FailureReason": app.failure_reason,
            "LastHealthCheckTimestamp": epoch(app.status_changed_at),
            "LastUserActivityTimestamp": epoch(app.last_activity_at),
        }
    )


def list_apps(call: Call) -> dict[str, Any]:
    """A user profile's apps (``UserProfileNameEquals``), else every app the caller administers in
    the domain (or everywhere); a caller who administers none gets their own apps."""
    if call.params.get("SpaceNameEquals"):
        raise validation("Spaces are not supported by ProfilerHub")
    user_name = call.params.get("UserProfileNameEquals")
    by_domain = call.params.get("DomainIdEquals")
    if user_name and not by_domain:
        raise validation("UserProfileNameEquals needs DomainIdEquals")
    stmt: sa.Select[Any]
    if user_name:
        call = call.with_params(DomainId=by_domain, UserProfileName=user_name)
        target = call.allowed(call.user(), Action.ListApps)
        assert target.user is not None
        stmt, scope = apps.apps_query(user_id=target.user.id), f"apps:{target.user.id}"
    else:
        domain_target = call.domain("DomainIdEquals") if by_domain else call.hub()
        try:
            target = call.allowed(domain_target, Action.ListAllApps)
            domain = target.domain.id if target.domain is not None else visible_domain(target.caller)
            stmt, scope = apps.apps_query(domain_id=domain), f"all-apps:{domain}"
        except AccessDenied:  # not an administrator here: their own apps, as ListApps allows
            mine = {"domain": call.caller.domain_name, "user": call.caller.user_name}
            own = resolve(call.session, call.caller, mine)
            target = call.allowed(own, Action.ListApps)
            assert target.user is not None
            stmt, scope = apps.apps_query(user_id=target.user.id), f"apps:{target.user.id}"
    rows, token = call.page(stmt, [App.created_at, App.id], scope)
    names = _user_names(call.session, rows)
    return _page_answer("Apps", [_app_details(call, a, names[a.user_id]) for a in rows], token)


def _user_names(session: Session, rows: list[App]) -> dict[str, str]:
    """``user_id -> user name`` for a page of apps, in one query."""
    ids = {a.user_id for a in rows}
    if not ids:
        return {}
    stmt = sa.select(UserProfile.id, UserProfile.name).where(UserProfile.id.in_(ids))
    return {user_id: name for user_id, name in session.execute(stmt)}


def delete_app(call: Call) -> dict[str, Any]:
    target = call.allowed(call.user(), Action.DeleteApp)
    app_cases.delete_app(call.door, target, call.the_app(target))
    return {}


def create_presigned_domain_url(call: Call) -> dict[str, Any]:
    """A one-time sign-in URL into the user's profiler app (for that user alone, like REST's
    presigned app URL): their app of the landing URI's type (``LandingUri``, else the profile's
    ``UserSettings.DefaultLandingUri``, else ``DetailedProfiler``) named ``default`` when it is
    InService, else their newest InService app of that type, else their newest InService app."""
    target = call.allowed(call.user(), Action.OpenApp)
    assert target.user is not None
    landing = call.params.get("LandingUri") or (target.user.aws_settings or {}).get("DefaultLandingUri")
    app_type = (_landing_app_type(landing) if landing else None) or AppType.DetailedProfiler
    stmt = (
        sa.select(App)
        .where(App.user_id == target.user.id, App.status == AppStatus.InService)
        .order_by(
            sa.and_(App.app_type == app_type, App.app_name == "default").desc(),
            (App.app_type == app_type).desc(),
            App.created_at.desc(),
        )
        .limit(1)
    )
    app = call.session.scalar(stmt)
    if app is None:
        raise NotFound(
            f"User profile '{target.user.name}' has no InService app to sign in to; create_app first"
        )
    ttl = call.params.get("ExpiresInSeconds") or DEFAULT_PRESIGNED_SECONDS
    return {"AuthorizedUrl": app_cases.open_app(call.door, target, app, ttl)}


OPERATIONS: dict[str, Callable[[Call], dict[str, Any]]] = {
    "CreateDomain": create_domain,
    "DescribeDomain": describe_domain,
    "ListDomains": list_domains,
    "UpdateDomain": update_domain,
    "DeleteDomain": delete_domain,
    "CreateUserProfile": create_user_profile,
    "DescribeUserProfile": describe_user_profile,
    "ListUserProfiles": list_user_profiles,
    "UpdateUserProfile": update_user_profile,
    "DeleteUserProfile": delete_user_profile,
    "CreateApp": create_app,
    "DescribeApp": describe_app,
    "ListApps": list_apps,
    "DeleteApp": delete_app,
    "CreatePresignedDomainUrl": create_presigned_domain_url,
    "AddTags": tagging.add_tags,
    "ListTags": tagging.list_tags,
    "DeleteTags": tagging.delete_tags,
    "DescribeTrainingJob": training_jobs.describe_training_job,
    "ListTrainingJobs": training_jobs.list_training_jobs,
    "StopTrainingJob": training_jobs.stop_training_job,
    "UpdateTrainingJob": training_jobs.update_training_job,
}

__all__ = ["OPERATIONS", "Call"]
