"""Local accounts: one function per operation, for every door (REST, the console's forms, and
``profilerhub login`` through REST); each takes the ``Door`` and, where one is, the resolved target:

    invite_user          an administrator's one-time link; a reset when the user had a password
    revoke_invitation    an open invitation no longer usable
    accept_invitation    the invited user chooses a password and is signed in (a console session,
                         or a token of theirs: ``accept_invitation_for_token``)
    password_sign_in     name + password (+ a one-time code, once two-factor sign-in is on) ->
                         the user's own console session, or their own token
    change_password      the user alone, with their current password
    update_two_factor    the user alone: set up, confirm or turn off a TOTP second factor

Each checks, changes the records, writes the operation's one audit row and commits. Password
sessions are the user's own (no impersonation): they open the user's apps. Their source is the
password, and so is that of every token and access key minted from it (``profilerhub login``, a
password session, a token descended from either: ``ApiToken.source``). A reset (a new
invitation) deletes the password, revokes every token and access key descended from it, ends
every session of the user and voids their open links; a change ends the user's other password
sessions (their tokens stay: "revoke all and sign out everywhere" ends those); deleting the
user takes everything of theirs.

Wrong passwords are counted per account and per client address (``ratelimit``'s password
buckets); past either limit only password sign-ins (to that account, or from that address) are
refused with 429: tokens, sessions and other accounts keep working.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from profilerhub_core import totp
from profilerhub_core.db.models import ApiToken, BrowserSession, Invitation, UserProfile
from profilerhub_core.errors import AccessDenied, Unauthorized
from profilerhub_core.records import accounts, audit, sessions, tokens
from profilerhub_core.settings import Settings
from profilerhub_hub.deps.targets import Resolved
from profilerhub_hub.permissions import Action
from profilerhub_hub.ratelimit import PASSWORD_ACCOUNT, PASSWORD_ADDRESS, RateLimits
from profilerhub_hub.usecases.door import Door

INVITATION_PATH = "/console/invitation"
ISSUER = "ProfilerHub"  # how an authenticator app names the hub's accounts
PASSWORD = "password"  # how a password session says where it came from (``via``)


def require_local_accounts(settings: Settings) -> None:
    if not settings.local_accounts_enabled:
        raise AccessDenied(
            "Local accounts are off on this hub (an OpenID provider signs users in); an operator turns "
            "them on with PROFILERHUB_LOCAL_ACCOUNTS=true"
        )


def invitation_url(settings: Settings, secret: str) -> str:
    return f"{settings.public_url}{INVITATION_PATH}?token={quote(secret)}"


@dataclass(frozen=True, slots=True)
class Invited:
    invitation: Invitation
    url: str
    reset: bool  # the user had a password, now deleted
    sessions_ended: int
    tokens_revoked: int  # tokens and access keys descended from the password


def invite_user(door: Door, target: Resolved, seconds: int | None = None) -> Invited:
    """A one-time link for the target user to choose a password. Older open invitations are
    revoked; a password the user had is deleted, every token and access key descended from it
    revoked, and every session of the user ended, their open links voided (a reset)."""
    session, settings = door.session, door.settings
    require_local_accounts(settings)
    assert target.user is not None
    had_password = accounts.password_of(session, target.user.id) is not None
    seconds = seconds or int(settings.invitation_days * 86400)
    row, secret = accounts.invite(session, target.user, created_by=target.caller.actor, seconds=seconds)
    revoked = tokens.revoke_descended(session, target.user, sessions.PASSWORD)
    ended = sessions.end_user_sessions(session, target.user.id)  # those of the revoked tokens too
    detail = {
        "invitation_id": row.id,
        "expires_at": row.expires_at.isoformat(),
        "reset": had_password,
        "sessions_ended": ended,
        "tokens_revoked": len(revoked),
    }
    door.commit(target, Action.CreateInvitation, f"{target.name}/{row.id}", detail=detail)
    return Invited(row, invitation_url(settings, secret), had_password, ended, len(revoked))


def revoke_invitation(door: Door, target: Resolved, invitation_id: str) -> Invitation:
    assert target.user is not None
    row = accounts.get_invitation(door.session, target.user, invitation_id)
    revoked = accounts.revoke_invitation(door.session, row)
    detail = {"invitation_id": row.id, "was_open": revoked}
    door.commit(target, Action.DeleteInvitation, f"{target.name}/{row.id}", detail=detail)
    return row


def _commit_as(
    door: Door,
    user: UserProfile,
    action: str,
    target_type: str,
    *,
    suffix: str = "",
    detail: dict[str, Any],
) -> None:
    """Audit what ``user`` did signing in (the actor and, with ``suffix``, the target); commit."""
    actor = f"{user.domain.name}/{user.name}"
    target = actor + suffix
    audit.record_audit(door.session, actor=actor, action=action, target_type=target_type, target=target,
                       domain=user.domain.name, detail=detail)  # fmt: skip
    door.session.commit()


def _signed_in(door: Door, user: UserProfile) -> str:
    """A console session of ``user``'s own, from their password; its cookie secret."""
    _, cookie = sessions.start_session(
        door.session,
        user.id,
        kind=sessions.CONSOLE,
        via=PASSWORD,
        seconds=int(door.settings.console_session_hours * 3600),
        source=sessions.Source(sessions.PASSWORD),
    )
    return cookie


def _spend_invitation(door: Door, secret: str, password: str) -> UserProfile:
    """Spend the invitation and set the password (a refused password, ``InvalidInput``, leaves the
    invitation open; an unusable one is audited as refused)."""
    session, settings = door.session, door.settings
    require_local_accounts(settings)
    try:
        return accounts.accept_invitation(session, secret, password, min_length=settings.password_min_length)
    except accounts.InvitationNotUsable as exc:
        session.rollback()
        audit.record_audit(
            session, actor="anonymous", action="AcceptInvitation", target_type="Invitation",
            target="invitation", outcome=audit.DENIED, detail={"reason": exc.message},
        )  # fmt: skip
        session.commit()
        raise


def accept_invitation(door: Door, secret: str, password: str) -> str:
    """The console's invitation form: spend it, set the password, sign the browser in; the console
    cookie's secret."""
    user = _spend_invitation(door, secret, password)
    cookie = _signed_in(door, user)
    _commit_as(door, user, "AcceptInvitation", "Invitation", detail={"signed_in": True, "via": PASSWORD})
    return cookie


def accept_invitation_for_token(door: Door, secret: str, password: str, *, note: str) -> tuple[ApiToken, str]:
    """The same from a terminal or script: spend it, set the password; a new token of the user's own."""
    user = _spend_invitation(door, secret, password)
    token, token_secret = tokens.issue_token(door.session, user, note=note, source=sessions.PASSWORD)
    detail = {"token_id": token.id, "via": PASSWORD}
    _commit_as(door, user, "AcceptInvitation", "Invitation", detail=detail)
    return token, token_secret


class CodeNeeded(Unauthorized):
    """The password is right, and the account has two-factor sign-in on: a one-time code is due."""


def _check_password(
    door: Door, limits: RateLimits, domain: str, name: str, password: str, address: str, code: str = ""
) -> UserProfile:
    """The user whose password this is (and, when they turned two-factor sign-in on, whose
    one-time ``code`` this is); ``Throttled`` past a limit, ``Unauthorized`` when wrong (unknown
    user, no password, wrong password alike; a wrong code counts as a wrong password; each
    attempt audited), ``CodeNeeded`` when the password is right and no code was given."""
    account = f"{domain[:63]}/{name[:63]}"
    limits.check(PASSWORD_ACCOUNT, account)
    limits.check(PASSWORD_ADDRESS, address)
    user = accounts.check_sign_in(door.session, domain, name, password)
    refused = "wrong name or password" if user is None else None
    if user is not None and accounts.needs_second_factor(door.session, user):
        if not code:
            raise CodeNeeded("Enter the one-time code your authenticator app shows for this account")
        if not accounts.check_second_factor(door.session, user, code):
            refused = "wrong one-time code"
    if refused is not None:
        door.session.rollback()
        audit.record_audit(
            door.session,
            actor="anonymous",
            action="SignIn",
            target_type="UserProfile",
            target=account,
            outcome=audit.DENIED,
            detail={"via": PASSWORD, "reason": refused},
        )
        door.session.commit()
        limits.hit(PASSWORD_ACCOUNT, account)
        limits.hit(PASSWORD_ADDRESS, address)
        if user is not None:
            raise Unauthorized("That one-time code is not right (or was used already)")
        raise Unauthorized("Wrong domain, user name or password")
    assert user is not None
    return user


def password_sign_in(
    door: Door,
    limits: RateLimits,
    domain: str,
    name: str,
    password: str,
    address: str,
    code: str = "",
) -> str:
    """A console session for the user whose password (and one-time ``code``) this is; its cookie secret."""
    require_local_accounts(door.settings)
    user = _check_password(door, limits, domain, name, password, address, code)
    cookie = _signed_in(door, user)
    _commit_as(door, user, "SignIn", "BrowserSession", detail={"via": PASSWORD})
    return cookie


def password_token(
    door: Door,
    limits: RateLimits,
    domain: str,
    name: str,
    password: str,
    address: str,
    *,
    note: str,
    expires_in_seconds: int | None,
    code: str = "",
) -> tuple[ApiToken, str]:
    """A new API token of the user's own, for the user whose password (and one-time ``code``)
    this is (``profilerhub login``)."""
    require_local_accounts(door.settings)
    user = _check_password(door, limits, domain, name, password, address, code)
    token, secret = tokens.issue_token(
        door.session, user, note=note, expires_in_seconds=expires_in_seconds, source=sessions.PASSWORD
    )
    detail = {"via": PASSWORD, "token_id": token.id}
    _commit_as(door, user, "CreateToken", "ApiToken", suffix=f"/{token.id}", detail=detail)
    return token, secret


@dataclass(frozen=True, slots=True)
class TwoFactorState:
    status: str  # "off", "pending" (set up, not confirmed yet), "on"
    secret: str | None = None  # only while pending: for the authenticator app
    otpauth_url: str | None = None


def two_factor_state(door: Door, target: Resolved) -> TwoFactorState:
    assert target.user is not None
    row = accounts.two_factor_of(door.session, target.user.id)
    if row is None:
        return TwoFactorState("off")
    if row.enabled_at is not None:
        return TwoFactorState("on")
    return TwoFactorState("pending", row.secret, totp.otpauth_url(row.secret, target.name, ISSUER))


def update_two_factor(door: Door, target: Resolved, change: str, code: str = "") -> TwoFactorState:
    """``change``: ``start`` (a new pending secret), ``confirm`` (on, with a code of it) or ``off``
    (with a code, when on). The user alone, audited (never the secret)."""
    require_local_accounts(door.settings)
    assert target.user is not None
    if change == "start":
        accounts.start_two_factor(door.session, target.user)
    elif change == "confirm":
        accounts.confirm_two_factor(door.session, target.user, code)
    else:
        assert change == "off"
        accounts.disable_two_factor(door.session, target.user, code)
    state = two_factor_state(door, target)
    detail = {"change": change, "status": state.status}
    door.commit(target, Action.UpdateTwoFactor, target.name, detail=detail)
    return state


def change_password(door: Door, target: Resolved, current: str, new: str) -> int:
    """Set the caller's new password; the user's other password sessions end. How many ended."""
    session, settings = door.session, door.settings
    require_local_accounts(settings)
    assert target.user is not None
    accounts.change_password(session, target.user, current, new, min_length=settings.password_min_length)
    others = [BrowserSession.user_id == target.user.id, BrowserSession.via == PASSWORD]
    if target.caller.session_id:
        others.append(BrowserSession.id != target.caller.session_id)
    ended = sessions.end_sessions(session, *others)  # and what descends from them
    door.commit(target, Action.UpdatePassword, target.name, detail={"sessions_ended": ended})
    return ended


__all__ = [
    "INVITATION_PATH",
    "PASSWORD",
    "CodeNeeded",
    "Invited",
    "TwoFactorState",
    "accept_invitation",
    "accept_invitation_for_token",
    "change_password",
    "invitation_url",
    "invite_user",
    "password_sign_in",
    "password_token",
    "require_local_accounts",
    "revoke_invitation",
    "two_factor_state",
    "update_two_factor",
]
