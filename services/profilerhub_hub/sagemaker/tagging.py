"""``AddTags``, ``ListTags``, ``DeleteTags`` on domains, user profiles and apps, and the ``Tags``
of ``CreateDomain`` / ``CreateUserProfile`` / ``CreateApp``.

A ``ResourceArn`` is one of this hub's ARNs (``model.Arns``); its resource is found exactly as
the Describe operation finds it, hidden alike. Reading tags needs the resource's Describe action;
changing them needs the action that changes the resource:

    domain        DescribeDomain       / UpdateDomain       (platform administrators)
    user profile  DescribeUserProfile  / UpdateUserProfile  (domain administrators)
    app           DescribeApp          / UpdateApp          (its owner, or their administrator)

SageMaker's limits hold: 1–128 characters per key, 0–256 per value, letters, numbers, spaces
and ``_.:/=+-@`` (the model's patterns, checked by ``model.validate_input``), at most 50 tags per
resource (``ResourceLimitExceeded``), keys starting ``aws:`` reserved, a key once per request.

One tag means something: ``profilerhub:role`` on a user profile is their ProfilerHub role
(``admin`` or ``user``), set when the tag is added and back to ``user`` when it is deleted.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from profilerhub_core.db.models import AppType, ResourceTag, Role, UserProfile
from profilerhub_core.errors import NotFound
from profilerhub_core.records import tags, users
from profilerhub_hub.deps.targets import Resolved
from profilerhub_hub.permissions import Action
from profilerhub_hub.sagemaker.errors import validation

if TYPE_CHECKING:
    from profilerhub_hub.sagemaker.call import Call

ROLE_TAG = "profilerhub:role"
_APP_TYPES = {t.value.lower(): t for t in AppType}

# (read action, write action) per kind of ARN.
_ACTIONS = {
    "domain": (Action.DescribeDomain, Action.UpdateDomain),
    "user-profile": (Action.DescribeUserProfile, Action.UpdateUserProfile),
    "app": (Action.DescribeApp, Action.UpdateApp),
}


def checked_tags(given: Sequence[dict[str, str]]) -> list[tuple[str, str]]:
    """``Tags`` as ``(key, value)`` pairs, after the checks the model leaves to the service."""
    pairs = [(t["Key"], t["Value"]) for t in given]
    keys = [k for k, _ in pairs]
    reserved = sorted({k for k in keys if k.lower().startswith("aws:")})
    if reserved:
        raise validation(f"Tag keys starting with 'aws:' are reserved: {', '.join(reserved)}")
    repeated = sorted({k for k in keys if keys.count(k) > 1})
    if repeated:
        raise validation(f"Tag keys must be unique in one request: {', '.join(repeated)}")
    return pairs


def role_of(pairs: Sequence[tuple[str, str]]) -> Role | None:
    """The role the ``profilerhub:role`` tag sets, if the tags carry one."""
    for key, value in pairs:
        if key == ROLE_TAG:
            try:
                return Role(value)
            except ValueError:
                raise validation(f"Tag {ROLE_TAG} must be 'admin' or 'user'") from None
    return None


@dataclass(frozen=True, slots=True)
class _Tagged:
    target: Resolved
    owner: tags.Owner
    name: str  # as the audit log names the resource
    action: Action  # the action allowed (read or write)


def _tagged(call: Call, write: bool) -> _Tagged:
    """The resource ``call.params["ResourceArn"]`` names, allowed for reading or changing tags."""
    arn = call.params["ResourceArn"]
    parsed = call.arns.parse(arn)
    if parsed is None:
        raise validation(f"ResourceArn '{arn[:120]}' is not a domain, user profile or app of this hub")
    kind, parts = parsed
    action = _ACTIONS[kind][1 if write else 0]
    if kind == "domain":
        scoped = call.with_params(DomainId=parts[0])
        target = scoped.allowed(scoped.domain(), action)
        assert target.domain is not None
        return _Tagged(target, target.domain, target.name, action)
    if kind == "app" and parts[2] not in _APP_TYPES:
        raise NotFound(f"App '{parts[2][:40]}/{parts[3][:80]}' not found")
    scoped = call.with_params(DomainId=parts[0], UserProfileName=parts[1])
    target = scoped.allowed(scoped.user(), action)
    assert target.user is not None
    if kind == "user-profile":
        return _Tagged(target, target.user, target.name, action)
    app = scoped.with_params(AppType=_APP_TYPES[parts[2]].value, AppName=parts[3]).the_app(target)
    return _Tagged(target, app, f"{target.name}/{app.app_type.value}/{app.app_name}", action)


def add_tags(call: Call) -> dict[str, Any]:
    tagged = _tagged(call, write=True)
    pairs = checked_tags(call.params["Tags"])
    tags.add_tags(call.session, tagged.owner, pairs)
    detail: dict[str, Any] = {"tags_added": [k for k, _ in pairs]}
    role = role_of(pairs)
    if role is not None and isinstance(tagged.owner, UserProfile):
        detail |= users.update_user(call.session, tagged.owner, role=role)
    call.door.commit(tagged.target, tagged.action, tagged.name, detail=detail)
    return {"Tags": [{"Key": k, "Value": v} for k, v in pairs]}


def delete_tags(call: Call) -> dict[str, Any]:
    tagged = _tagged(call, write=True)
    keys = list(dict.fromkeys(call.params["TagKeys"]))
    tags.delete_tags(call.session, tagged.owner, keys)
    detail: dict[str, Any] = {"tags_deleted": keys}
    owner = tagged.owner
    if ROLE_TAG in keys and isinstance(owner, UserProfile) and not owner.is_platform_admin:
        detail |= users.update_user(call.session, owner, role=Role.user)
    call.door.commit(tagged.target, tagged.action, tagged.name, detail=detail)
    return {}


def list_tags(call: Call) -> dict[str, Any]:
    """In the order the tags were added; ``MaxResults`` (at least 50, the model says) else the hub's
    ``default_page_size`` per page."""
    owner = _tagged(call, write=False).owner
    scope = f"tags:{tags.resource_of(owner)}"
    rows, token = call.page(tags.tags_query(owner), [ResourceTag.id], scope, descending=False)
    answer: dict[str, Any] = {"Tags": [{"Key": t.key, "Value": t.value} for t in rows]}
    if token:
        answer["NextToken"] = token
    return answer


def new_tags(call: Call) -> list[tuple[str, str]]:
    """The ``Tags`` a Create operation was given, checked (the use case stores them on what it makes)."""
    return checked_tags(call.params.get("Tags", []))


__all__ = ["ROLE_TAG", "add_tags", "checked_tags", "delete_tags", "list_tags", "new_tags", "role_of"]
