"""Presigned sign-in URLs: ``POST /domains/{domain}/users/{user}/presigned-url``.

Like SageMaker's ``CreatePresignedDomainUrl``: automation (or the user) gets a one-time link that
signs a browser in as the user and lands on the console or straight in the user's profiler app.
A link an administrator makes for someone else carries their name: its session is an
impersonation, which opens apps only where the domain allows it.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictInt

from profilerhub_hub.audit import commit_audited
from profilerhub_hub.console.links import make_link
from profilerhub_hub.deps import Resolved, SessionDep, SettingsDep, allow, lineage
from profilerhub_hub.permissions import Action, impersonator
from profilerhub_hub.routes.paths import OF_USER, api_router

router = api_router(tags=["sign-in"])


class SignInUrlCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")

    expires_in_seconds: StrictInt = Field(
        300, ge=5, le=300, description="How long the link may be used (once)."
    )
    session_expiration_seconds: StrictInt = Field(
        43200, ge=1800, le=43200, description="How long the browser session it starts lasts."
    )
    landing: Literal["console", "app"] = Field(
        "console", description="Where the browser lands: the console, or the user's profiler app."
    )


class SignInUrlRead(BaseModel):
    url: str = Field(description="Open once in a browser: signs it in as the user.")
    expires_at: datetime
    impersonated_by: str | None = Field(None, description="Set when made by someone other than the user.")


@router.post("/domains/{domain}/users/{user}/presigned-url", openapi_extra=OF_USER)
def create_presigned_signin_url(
    session: SessionDep,
    settings: SettingsDep,
    target: Annotated[Resolved, allow(Action.CreatePresignedSignInUrl)],
    body: SignInUrlCreate | None = None,
) -> SignInUrlRead:
    """A one-time sign-in link for the user (their own, or made by an administrator of theirs)."""
    assert target.user is not None
    body = body or SignInUrlCreate.model_validate({})
    by = impersonator(target.caller, target.user.id)
    url, expires = make_link(
        settings,
        user_id=target.user.id,
        impersonated_by=by,
        scopes=target.caller.scopes,
        expires_in_seconds=body.expires_in_seconds,
        session_seconds=body.session_expiration_seconds,
        landing=body.landing,
        source=lineage(target.caller),
    )
    detail = {"landing": body.landing, **({"impersonated_by": by} if by else {})}
    commit_audited(session, target, Action.CreatePresignedSignInUrl, target.name, detail=detail)
    return SignInUrlRead(url=url, expires_at=datetime.fromtimestamp(expires, UTC), impersonated_by=by)
