"""Local accounts: invitations (``/domains/{domain}/users/{user}/invitations``), the user's
password (``…/password``) and second factor (``…/two-factor``), and tokens of the user's own for
an invitation (``/sign-in/invitation``) or a name and password (``/sign-in/password``).

The operations are ``profilerhub_hub.usecases.accounts``'s; the console's invitation and sign-in forms
call the same ones.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal
from urllib.parse import parse_qs, urlsplit

from fastapi import Request, Response
from fastapi.concurrency import run_in_threadpool
from pydantic import BaseModel, Field, StrictInt

from profilerhub_core.db.models import Invitation
from profilerhub_core.names import ResourceName
from profilerhub_core.passwords import MAX_LENGTH
from profilerhub_core.records import accounts as account_records
from profilerhub_hub.deps import PageDep, Resolved, SessionDep, allow
from profilerhub_hub.deps.door import DoorDep
from profilerhub_hub.permissions import Action
from profilerhub_hub.ratelimit import client_address
from profilerhub_hub.routes.paths import OF_USER, api_router
from profilerhub_hub.schemas import Page, RequestModel, TokenCreated
from profilerhub_hub.services import services
from profilerhub_hub.usecases import accounts, door_of

router = api_router(tags=["accounts"])
INVITATIONS = "/domains/{domain}/users/{user}/invitations"


class InvitationCreate(RequestModel):
    expires_in_seconds: StrictInt | None = Field(
        None, ge=300, le=90 * 86400, description="How long the link may be used (once); default 7 days."
    )


class InvitationRead(BaseModel):
    invitation_id: str
    status: Literal["open", "used", "revoked", "expired"]
    created_by: str = Field(description="The administrator who made it.")
    created_at: datetime
    expires_at: datetime
    used_at: datetime | None

    @classmethod
    def of(cls, row: Invitation) -> InvitationRead:
        return cls(
            invitation_id=row.id,
            status=account_records.invitation_status(row),  # type: ignore[arg-type]
            created_by=row.created_by,
            created_at=row.created_at,
            expires_at=row.expires_at,
            used_at=row.used_at,
        )


class InvitationCreated(InvitationRead):
    url: str = Field(description="Give it to the user: opened once, it lets them choose a password.")
    reset: bool = Field(
        description="The user had a password: it is deleted, every token and access key descended "
        "from it revoked, and every session of the user ended."
    )
    sessions_ended: int
    tokens_revoked: int = Field(
        description="Tokens and access keys minted from the user's password (profilerhub login, a "
        "password sign-in's session, or a token descended from either), revoked."
    )


class PasswordUpdate(RequestModel):
    current_password: str = Field(max_length=MAX_LENGTH)
    new_password: str = Field(max_length=MAX_LENGTH)


class PasswordSignIn(RequestModel):
    domain: ResourceName
    user: ResourceName
    password: str = Field(max_length=MAX_LENGTH)
    code: str = Field(
        "",
        max_length=12,
        description="The one-time code of the user's authenticator app, once two-factor sign-in is on.",
    )
    note: str = Field("", max_length=200, description="What the token is for.")
    expires_in_seconds: StrictInt | None = Field(
        None, ge=60, le=10 * 366 * 24 * 3600, description="Lifetime; omit for a token that does not expire."
    )


class InvitationAccept(RequestModel):
    invitation: str = Field(max_length=400, description="The invitation's link, or its phi_… token.")
    password: str = Field(max_length=MAX_LENGTH, description="The password the user chooses.")
    note: str = Field("", max_length=200, description="What the token is for.")


@router.post(INVITATIONS, status_code=201, openapi_extra=OF_USER)
def create_invitation(
    door: DoorDep,
    target: Annotated[Resolved, allow(Action.CreateInvitation)],
    body: InvitationCreate | None = None,
) -> InvitationCreated:
    """A one-time link for the user to choose a password (a reset when they had one)."""
    invited = accounts.invite_user(door, target, body.expires_in_seconds if body else None)
    read = InvitationRead.of(invited.invitation)
    return InvitationCreated(
        **read.model_dump(), url=invited.url, reset=invited.reset, sessions_ended=invited.sessions_ended,
        tokens_revoked=invited.tokens_revoked,
    )  # fmt: skip


@router.get(INVITATIONS, openapi_extra=OF_USER)
def list_invitations(
    session: SessionDep, page: PageDep, target: Annotated[Resolved, allow(Action.ListInvitations)]
) -> Page[InvitationRead]:
    assert target.user is not None
    stmt = account_records.invitations_query(target.user)
    order = [Invitation.created_at, Invitation.id]
    return page.fetch(session, stmt, order, InvitationRead.of, scope=f"invitations:{target.user.id}")


@router.delete(INVITATIONS + "/{invitation_id}", status_code=204, openapi_extra=OF_USER)
def delete_invitation(
    invitation_id: str, door: DoorDep, target: Annotated[Resolved, allow(Action.DeleteInvitation)]
) -> Response:
    accounts.revoke_invitation(door, target, invitation_id)
    return Response(status_code=204)


@router.put("/domains/{domain}/users/{user}/password", status_code=204, openapi_extra=OF_USER)
def update_password(
    body: PasswordUpdate,
    door: DoorDep,
    target: Annotated[Resolved, allow(Action.UpdatePassword)],
) -> Response:
    """Change your own password (your other password sessions end)."""
    accounts.change_password(door, target, body.current_password, body.new_password)
    return Response(status_code=204)


@router.post(
    "/sign-in/invitation",
    status_code=201,
    responses={
        400: {"description": "The password is refused (too short, common, contains the name)"},
        401: {"description": "The invitation is unknown, used, revoked or expired"},
    },
)
async def accept_invitation(body: InvitationAccept, request: Request) -> TokenCreated:
    """Use an invitation from a terminal or script: choose the password, get a new token of your own
    (the console's invitation page does the same in a browser). Not rate limited: an unknown link
    costs one indexed lookup, and only a real one costs a password hash."""
    state = services(request)
    secret = parse_qs(urlsplit(body.invitation).query).get("token", [body.invitation])[0].strip()

    def accept() -> TokenCreated:
        with state.sessions() as session:
            note = body.note or "invitation"
            token, token_secret = accounts.accept_invitation_for_token(
                door_of(state, session, "api"), secret, body.password, note=note
            )
            return TokenCreated.of(token, token_secret)

    return await run_in_threadpool(accept)


TWO_FACTOR = "/domains/{domain}/users/{user}/two-factor"


class TwoFactorRead(BaseModel):
    status: Literal["off", "pending", "on"] = Field(
        description="pending: set up, waiting for a code of it (PUT) to turn it on."
    )
    secret: str | None = Field(
        None, description="While pending only: the base32 secret for the authenticator app."
    )
    otpauth_url: str | None = Field(None, description="While pending only: the same as an otpauth:// URL.")


class TwoFactorUpdate(RequestModel):
    enabled: bool = Field(description="true: turn the pending set-up on; false: turn it off.")
    code: str = Field("", max_length=12, description="A current code of the authenticator app.")


def _two_factor_read(state: accounts.TwoFactorState) -> TwoFactorRead:
    return TwoFactorRead(status=state.status, secret=state.secret, otpauth_url=state.otpauth_url)  # type: ignore[arg-type]


@router.get(TWO_FACTOR, openapi_extra=OF_USER)
def read_two_factor(
    door: DoorDep, target: Annotated[Resolved, allow(Action.DescribeTwoFactor)]
) -> TwoFactorRead:
    """Whether your password sign-ins need a one-time code (the user alone)."""
    return _two_factor_read(accounts.two_factor_state(door, target))


@router.post(TWO_FACTOR, status_code=201, openapi_extra=OF_USER)
def start_two_factor(
    door: DoorDep, target: Annotated[Resolved, allow(Action.UpdateTwoFactor)]
) -> TwoFactorRead:
    """Set up two-factor sign-in: a new secret for your authenticator app (pending until a code
    of it turns it on; 409 while it is on)."""
    return _two_factor_read(accounts.update_two_factor(door, target, "start"))


@router.put(TWO_FACTOR, openapi_extra=OF_USER)
def update_two_factor(
    body: TwoFactorUpdate, door: DoorDep, target: Annotated[Resolved, allow(Action.UpdateTwoFactor)]
) -> TwoFactorRead:
    """Turn it on (a code of the pending secret) or off (a current code); 403 for a wrong code."""
    change = "confirm" if body.enabled else "off"
    return _two_factor_read(accounts.update_two_factor(door, target, change, body.code))


@router.post(
    "/sign-in/password",
    status_code=201,
    responses={401: {"description": "Wrong domain, user name or password"}},
)
async def password_sign_in(body: PasswordSignIn, request: Request) -> TokenCreated:
    """A new API token of your own for your name and password (``profilerhub login``): no other
    credential needed. Wrong passwords are rate limited per account and per address."""
    state = services(request)
    address = client_address(request)

    def issue() -> TokenCreated:
        with state.sessions() as session:
            token, secret = accounts.password_token(
                door_of(state, session, "api"),
                state.rate_limits,
                body.domain,
                body.user,
                body.password,
                address,
                note=body.note,
                expires_in_seconds=body.expires_in_seconds,
                code=body.code,
            )
            return TokenCreated.of(token, secret)

    return await run_in_threadpool(issue)
