"""Access keys of one user, for boto3 and the AWS CLI: ``/domains/{domain}/users/{user}/access-keys``.

An access key is a token (``profilerhub_core.records.access_keys``): the same actions
(``CreateToken``, ``ListTokens``, ``DeleteToken``) govern it and the audit log records it as one.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import Response

from profilerhub_core.db.models import ApiToken
from profilerhub_core.records import access_keys, sessions, tokens
from profilerhub_hub.access_key_schemas import AccessKeyCreate, AccessKeyCreated, AccessKeyRead
from profilerhub_hub.audit import commit_audited
from profilerhub_hub.deps import PageDep, Resolved, SessionDep, SettingsDep, allow
from profilerhub_hub.permissions import Action, check_grantable, impersonator
from profilerhub_hub.routes.paths import OF_USER, api_router
from profilerhub_hub.schemas import Page

router = api_router("/domains/{domain}/users/{user}/access-keys", tags=["access keys"])


@router.post("", status_code=201, openapi_extra=OF_USER)
def create_access_key(
    session: SessionDep,
    settings: SettingsDep,
    target: Annotated[Resolved, allow(Action.CreateToken)],
    body: AccessKeyCreate | None = None,
) -> AccessKeyCreated:
    """A new access-key pair for the user; the secret is in this response only."""
    assert target.user is not None
    body = body or AccessKeyCreate(note="", scopes=None)
    scopes = [str(s) for s in body.scopes] if body.scopes is not None else list(target.caller.scopes)
    check_grantable(target.caller, scopes)
    token, secret = access_keys.issue_access_key(
        session, target.user, settings.signing_key(), note=body.note, scopes=scopes,
        created_by=impersonator(target.caller, target.user.id), source=target.caller.root_source,
    )  # fmt: skip
    commit_audited(
        session,
        target,
        Action.CreateToken,
        f"{target.name}/{token.id}",
        detail={"token_id": token.id, "access_key_id": token.prefix},
    )
    return AccessKeyCreated(
        access_key_id=token.prefix,
        secret_access_key=secret,
        token_id=token.id,
        scopes=list(token.scopes),
        note=token.note,
        created_at=token.created_at,
    )


@router.get("", openapi_extra=OF_USER)
def list_access_keys(
    session: SessionDep, page: PageDep, target: Annotated[Resolved, allow(Action.ListTokens)]
) -> Page[AccessKeyRead]:
    assert target.user is not None
    stmt = access_keys.access_keys_query(target.user)
    order = [ApiToken.created_at, ApiToken.id]
    return page.fetch(session, stmt, order, AccessKeyRead.of, scope=f"access-keys:{target.user.id}")


@router.delete("/{access_key_id}", status_code=204, openapi_extra=OF_USER)
def delete_access_key(
    access_key_id: str, session: SessionDep, target: Annotated[Resolved, allow(Action.DeleteToken)]
) -> Response:
    """Revoke the key: requests signed with it are refused from now on, and every browser session
    and link descended from it (an app link from ``CreatePresignedDomainUrl``) ends with it."""
    assert target.user is not None
    token = tokens.revoke_token(session, access_keys.get_access_key(session, target.user, access_key_id))
    ended = sessions.end_token_sessions(session, token.id)
    commit_audited(
        session,
        target,
        Action.DeleteToken,
        f"{target.name}/{token.id}",
        detail={"access_key_id": token.prefix, "sessions_ended": ended},
    )
    return Response(status_code=204)
