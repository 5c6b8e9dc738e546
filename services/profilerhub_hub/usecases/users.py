"""User profiles: create, update, delete, and the profile a first sign-in makes. Called by REST
(``routes/users.py``), SageMaker and the console alike."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from profilerhub_core.db.models import Domain, Role, UserProfile
from profilerhub_core.records import audit, tags, users
from profilerhub_core.storage import layout
from profilerhub_hub.audit import TARGET_TYPES
from profilerhub_hub.deps.targets import Resolved
from profilerhub_hub.permissions import Action
from profilerhub_hub.usecases.door import Door


def create_user(
    door: Door,
    target: Resolved,
    name: str,
    role: Role,
    *,
    aws_settings: dict[str, Any] | None = None,
    tags_given: Sequence[tuple[str, str]] = (),
) -> UserProfile:
    """A new profile in the target domain (SageMaker's: with its ``UserSettings`` and tags)."""
    assert target.domain is not None
    user = users.create_user(door.session, target.domain, name, role)
    if aws_settings:
        users.update_user(door.session, user, aws_settings=aws_settings)
        user.updated_at = None  # storing what it was created with is no modification
    if tags_given:
        tags.add_tags(door.session, user, list(tags_given))
    label = f"{target.domain.name}/{user.name}"
    door.commit(target, Action.CreateUserProfile, label, detail={"role": user.role.value})
    return user


def create_on_first_sign_in(door: Door, domain: Domain, name: str, sign_in: str) -> UserProfile:
    """The profile a person signing in for the first time makes for themselves, where their domain
    creates users on first sign-in (``create_users_on_sign_in``; the console's OpenID Connect
    sign-in). Audited as their own ``CreateUserProfile`` with ``via`` the sign-in's (as the
    console's ``SignIn`` rows say it: ``oidc``); flushed, the sign-in commits."""
    user = users.create_user(door.session, domain, name, Role.user)
    actor = f"{domain.name}/{name}"
    audit.record_audit(
        door.session, actor=actor, action=Action.CreateUserProfile.value,
        target_type=TARGET_TYPES[Action.CreateUserProfile], target=actor, domain=domain.name,
        detail={"role": user.role.value, "first_sign_in": True, "via": sign_in},
    )  # fmt: skip
    return user


def update_user(door: Door, target: Resolved, *, aws_settings: dict[str, Any]) -> UserProfile:
    """Replace the given members of the profile's stored SageMaker ``UserSettings``."""
    assert target.user is not None
    changes = users.update_user(door.session, target.user, aws_settings=aws_settings)
    door.commit(target, Action.UpdateUserProfile, target.name, detail={"changes": changes})
    return target.user


def delete_user(door: Door, target: Resolved) -> None:
    """Delete a profile (``Conflict`` while it has live apps), then its jobs' storage."""
    assert target.user is not None and target.domain is not None
    name, prefix = target.name, layout.user_prefix(target.domain.id, target.user.id)
    users.delete_user(door.session, target.user)
    door.commit(target, Action.DeleteUserProfile, name)
    door.delete_owned(prefix, f"user {name}")


__all__ = ["create_on_first_sign_in", "create_user", "delete_user", "update_user"]
