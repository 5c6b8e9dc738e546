"""Tags (``Key``/``Value``, SageMaker's) on domains, user profiles and apps.

    tags_query(owner)                 the owner's tags, for paging in creation order
    tags_of(session, owner)           ``{key: value}``
    add_tags(session, owner, pairs)   add or overwrite; ``LimitExceeded`` past ``MAX_TAGS``
    delete_tags(session, owner, keys) remove (unknown keys are no error, as in SageMaker)
    clear_tags(session, owner)        remove all (an app being deleted)

A tag row points at its owner by a cascading foreign key, so deleting a domain or a user profile
(and with it their apps) deletes the tags; an app's go when its deletion is requested, since the
app row itself stays readable as ``Deleted``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import sqlalchemy as sa
from sqlalchemy.orm import Session

from profilerhub_core.db.models import App, Domain, ResourceTag, UserProfile
from profilerhub_core.errors import LimitExceeded

MAX_TAGS = 50  # SageMaker's limit of tags per resource
Owner = Domain | UserProfile | App


def resource_of(owner: Owner) -> str:
    kind = "domain" if isinstance(owner, Domain) else "user" if isinstance(owner, UserProfile) else "app"
    return f"{kind}:{owner.id}"


def _link(owner: Owner) -> dict[str, str]:
    if isinstance(owner, Domain):
        return {"domain_id": owner.id}
    if isinstance(owner, UserProfile):
        return {"user_id": owner.id}
    return {"app_id": owner.id}


def tags_query(owner: Owner) -> sa.Select[ResourceTag]:
    return sa.select(ResourceTag).where(ResourceTag.resource == resource_of(owner))


def tags_of(session: Session, owner: Owner) -> dict[str, str]:
    return {t.key: t.value for t in session.scalars(tags_query(owner).order_by(ResourceTag.id))}


def add_tags(session: Session, owner: Owner, pairs: Sequence[tuple[str, str]]) -> None:
    """Set each ``(key, value)`` on ``owner`` (a key already there takes the new value; flushed)."""
    current = {t.key: t for t in session.scalars(tags_query(owner))}
    new_keys = {key for key, _ in pairs} - set(current)
    if len(current) + len(new_keys) > MAX_TAGS:
        raise LimitExceeded(
            f"A resource has at most {MAX_TAGS} tags: it has {len(current)}, this adds {len(new_keys)}"
        )
    resource, link = resource_of(owner), _link(owner)
    for key, value in pairs:
        if key in current:
            current[key].value = value
        else:
            current[key] = ResourceTag(resource=resource, key=key, value=value, **link)
            session.add(current[key])
    session.flush()


def delete_tags(session: Session, owner: Owner, keys: Iterable[str]) -> None:
    stmt = sa.delete(ResourceTag).where(
        ResourceTag.resource == resource_of(owner), ResourceTag.key.in_(list(keys))
    )
    session.execute(stmt)
    session.flush()


def clear_tags(session: Session, owner: Owner) -> None:
    session.execute(sa.delete(ResourceTag).where(ResourceTag.resource == resource_of(owner)))
    session.flush()


__all__ = [
    "MAX_TAGS",
    "Owner",
    "add_tags",
    "clear_tags",
    "delete_tags",
    "resource_of",
    "tags_of",
    "tags_query",
]
