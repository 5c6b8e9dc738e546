"""API tokens of one user: ``/domains/{domain}/users/{user}/tokens``."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

from fastapi import Response

from profilerhub_core.db.models import ApiToken, utcnow
from profilerhub_core.records import sessions, tokens
from profilerhub_hub.audit import commit_audited
from profilerhub_hub.deps import PageDep, Resolved, SessionDep, allow
from profilerhub_hub.permissions import Action, check_grantable, impersonator
from profilerhub_hub.routes.paths import OF_USER, api_router
from profilerhub_hub.schemas import Page, TokenCreate, TokenCreated, TokenRead

router = api_router("/domains/{domain}/users/{user}/tokens", tags=["tokens"])


@router.post("", status_code=201, openapi_extra=OF_USER)
def create_token(
    body: TokenCreate, session: SessionDep, target: Annotated[Resolved, allow(Action.CreateToken)]
) -> TokenCreated:
    assert target.user is not None and target.domain is not None
    # Scopes left out: the caller's own (a narrowed token mints narrowed tokens), never wider.
    scopes = (
        [str(s) for s in body.scopes] if "scopes" in body.model_fields_set else list(target.caller.scopes)
    )
    check_grantable(target.caller, scopes)
    token, secret = tokens.issue_token(
        session,
        target.user,
        expires_in_seconds=_capped(body.expires_in_seconds, target.caller.root_expires_at),
        note=body.note,
        scopes=scopes,
        created_by=impersonator(target.caller, target.user.id),
        source=target.caller.root_source,
    )
    commit_audited(
        session,
        target,
        Action.CreateToken,
        f"{target.name}/{token.id}",
        detail={
            "token_id": token.id,
            "expires_at": token.expires_at.isoformat() if token.expires_at else None,
            **({"impersonated_by": token.created_by} if token.created_by else {}),
        },
    )
    return TokenCreated.of(token, secret)


def _capped(seconds: int | None, root_expires_at: datetime | None) -> int | None:
    """A token minted by a credential that expires (a token, a session started from one) expires
    no later than it: a stolen expiring token cannot become a lasting one."""
    if root_expires_at is None:
        return seconds
    left = max(1, int((root_expires_at - utcnow()).total_seconds()))
    return left if seconds is None else min(seconds, left)


@router.get("", openapi_extra=OF_USER)
def list_tokens(
    session: SessionDep, page: PageDep, target: Annotated[Resolved, allow(Action.ListTokens)]
) -> Page[TokenRead]:
    assert target.user is not None
    now = utcnow()
    stmt = tokens.tokens_query(target.user)
    order = [ApiToken.created_at, ApiToken.id]
    return page.fetch(session, stmt, order, lambda t: TokenRead.of(t, now), scope=f"tokens:{target.user.id}")


@router.delete("/{token_id}", status_code=204, openapi_extra=OF_USER)
def delete_token(
    token_id: str, session: SessionDep, target: Annotated[Resolved, allow(Action.DeleteToken)]
) -> Response:
    assert target.user is not None and target.domain is not None
    token = tokens.revoke_token(session, tokens.get_token(session, target.user, token_id))
    ended = sessions.end_token_sessions(session, token.id)  # the browsers signed in with it
    commit_audited(
        session, target, Action.DeleteToken, f"{target.name}/{token.id}", detail={"sessions_ended": ended}
    )
    return Response(status_code=204)


@router.delete("", status_code=204, openapi_extra=OF_USER)
def revoke_everywhere(
    session: SessionDep, target: Annotated[Resolved, allow(Action.DeleteToken)]
) -> Response:
    """Revoke every token of the user and end every browser session (console and apps) at once."""
    assert target.user is not None
    revoked = tokens.revoke_all(session, target.user)
    ended = sessions.end_user_sessions(session, target.user.id)
    detail = {"tokens_revoked": revoked, "sessions_ended": ended}
    commit_audited(session, target, Action.DeleteToken, f"{target.name}/*", detail=detail)
    return Response(status_code=204)
