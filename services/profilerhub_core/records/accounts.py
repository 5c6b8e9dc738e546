"""Local accounts: invitations (one-time links to choose a password) and the passwords themselves.

    invite(session, user, created_by=..., seconds=...)   -> (Invitation, secret)   a reset too
    open_invitation(session, secret)                     -> (Invitation, user)     still usable?
    accept_invitation(session, secret, password, ...)    -> user                   used once
    check_sign_in(session, domain, name, password)       -> user | None
    change_password(session, user, current, new, ...)
    start_two_factor / confirm_two_factor / disable_two_factor / check_second_factor   (TOTP)

An invitation's secret is shown once (in its URL); the database keeps its sha256. A user has at
most one open invitation: a new one revokes the older ones and deletes the user's password, so an
administrator's reset locks the old password out at once (the caller also ends the user's
sessions). Accepting is a compare-and-set on ``used_at``, so two browsers (or two hub processes)
redeeming one link cannot both win. Functions flush; the caller commits (with its audit row).
"""

from __future__ import annotations

import time
from datetime import timedelta

import sqlalchemy as sa
from sqlalchemy.orm import Session

from profilerhub_core import passwords, totp
from profilerhub_core.db.models import Invitation, LocalPassword, TwoFactor, UserProfile, utcnow
from profilerhub_core.errors import AccessDenied, Conflict, InvalidInput, NotFound, Unauthorized
from profilerhub_core.records.users import get_user_by_names
from profilerhub_core.security import hash_token, new_token

INVITATION_PREFIX = "phi_"


class InvitationNotUsable(Unauthorized):
    """An invitation link that is unknown, used, revoked or expired (the message says which)."""


def invite(session: Session, user: UserProfile, *, created_by: str, seconds: int) -> tuple[Invitation, str]:
    """A new invitation for ``user`` and its secret; older open ones are revoked and the user's
    password (if any) is deleted."""
    now = utcnow()
    session.execute(
        sa.update(Invitation)
        .where(Invitation.user_id == user.id, Invitation.used_at.is_(None), Invitation.revoked_at.is_(None))
        .values(revoked_at=now)
    )
    session.execute(sa.delete(LocalPassword).where(LocalPassword.user_id == user.id))
    session.execute(sa.delete(TwoFactor).where(TwoFactor.user_id == user.id))  # the reset's too
    secret = INVITATION_PREFIX + new_token().removeprefix("phk_")
    row = Invitation(
        user_id=user.id, secret_hash=hash_token(secret), created_by=created_by, created_at=now,
        expires_at=now + timedelta(seconds=seconds),
    )  # fmt: skip
    session.add(row)
    session.flush()
    return row, secret


def invitation_status(row: Invitation) -> str:
    if row.used_at is not None:
        return "used"
    if row.revoked_at is not None:
        return "revoked"
    if row.expires_at <= utcnow():
        return "expired"
    return "open"


def invitations_query(user: UserProfile) -> sa.Select[Invitation]:
    return sa.select(Invitation).where(Invitation.user_id == user.id)


def get_invitation(session: Session, user: UserProfile, invitation_id: str) -> Invitation:
    row = session.scalar(
        sa.select(Invitation).where(Invitation.id == invitation_id[:36], Invitation.user_id == user.id)
    )
    if row is None:
        raise NotFound(f"Invitation '{invitation_id[:64]}' not found")
    return row


def revoke_invitation(session: Session, row: Invitation) -> bool:
    """Revoke ``row`` if it is still open; whether it was."""
    if invitation_status(row) != "open":
        return False
    row.revoked_at = utcnow()
    session.flush()
    return True


def open_invitation(session: Session, secret: str) -> tuple[Invitation, UserProfile]:
    """The open invitation behind ``secret`` and its user; ``InvitationNotUsable`` otherwise."""
    row = session.scalar(sa.select(Invitation).where(Invitation.secret_hash == hash_token(secret[:200])))
    if row is None:
        raise InvitationNotUsable("This invitation link is not valid; ask your administrator for a new one")
    status = invitation_status(row)
    if status != "open":
        said = {"used": "already used", "revoked": "revoked"}.get(status)
        said = said or f"valid until {row.expires_at:%Y-%m-%d %H:%M} UTC"
        raise InvitationNotUsable(f"This invitation link was {said}; ask your administrator for a new one")
    user = session.get(UserProfile, row.user_id)
    assert user is not None  # the row goes with its user
    return row, user


def accept_invitation(session: Session, secret: str, password: str, *, min_length: int) -> UserProfile:
    """Spend the invitation behind ``secret`` and set its user's password (checked first: a refused
    password leaves the invitation open)."""
    row, user = open_invitation(session, secret)
    passwords.check_password(password, min_length=min_length, names=(user.name, user.domain.name))
    spent = session.execute(
        sa.update(Invitation)
        .where(Invitation.id == row.id, Invitation.used_at.is_(None), Invitation.revoked_at.is_(None))
        .values(used_at=utcnow())
    )
    if getattr(spent, "rowcount", 0) != 1:
        raise InvitationNotUsable("This invitation link was just used; ask your administrator for a new one")
    set_password(session, user, password)
    return user


def set_password(session: Session, user: UserProfile, password: str) -> LocalPassword:
    """Replace ``user``'s password (a new row, so a new id). The caller checked the policy."""
    session.execute(sa.delete(LocalPassword).where(LocalPassword.user_id == user.id))
    row = LocalPassword(user_id=user.id, password_hash=passwords.hash_password(password))
    session.add(row)
    session.flush()
    return row


def password_of(session: Session, user_id: str) -> LocalPassword | None:
    return session.scalar(sa.select(LocalPassword).where(LocalPassword.user_id == user_id))


def check_sign_in(session: Session, domain: str, name: str, password: str) -> UserProfile | None:
    """The user ``domain/name`` when ``password`` is theirs; None otherwise (unknown user, no
    password set, wrong password: alike, and each costs one hash)."""
    user = get_user_by_names(session, domain[:63], name[:63]) if domain and name else None
    stored = password_of(session, user.id) if user is not None else None
    if not passwords.verify_password(stored.password_hash if stored else None, password):
        return None
    assert user is not None and stored is not None
    if passwords.needs_rehash(stored.password_hash):
        stored.password_hash = passwords.hash_password(password)
        session.flush()
    return user


def change_password(
    session: Session, user: UserProfile, current: str, new: str, *, min_length: int
) -> LocalPassword:
    """Set ``new`` after checking ``current`` (``AccessDenied`` when wrong or when none is set)."""
    stored = password_of(session, user.id)
    if not passwords.verify_password(stored.password_hash if stored else None, current):
        raise AccessDenied("The current password is not right")
    if new == current:
        raise InvalidInput("The new password is the current one")
    passwords.check_password(new, min_length=min_length, names=(user.name, user.domain.name))
    return set_password(session, user, new)


# -- the second factor (TOTP) ----------------------------------------------------------------------


clock = time.time  # what a code is checked against (a test sets it)


def two_factor_of(session: Session, user_id: str) -> TwoFactor | None:
    return session.get(TwoFactor, user_id)


def start_two_factor(session: Session, user: UserProfile) -> TwoFactor:
    """A new pending TOTP secret for ``user`` (replacing a pending one); ``Conflict`` when one is on."""
    row = two_factor_of(session, user.id)
    if row is not None and row.enabled_at is not None:
        raise Conflict("Two-factor sign-in is already on; turn it off first (with a code) to set up another")
    if row is not None:
        session.delete(row)
        session.flush()
    row = TwoFactor(user_id=user.id, secret=totp.new_secret())
    session.add(row)
    session.flush()
    return row


def _spend_code(row: TwoFactor | None, code: str) -> bool:
    """Whether ``code`` is a fresh code of ``row``'s secret (then its step is kept: used once)."""
    step = totp.verify(row.secret, code, now=clock(), after=row.last_step) if row is not None else None
    if row is None or step is None:
        return False
    row.last_step = step
    return True


def confirm_two_factor(session: Session, user: UserProfile, code: str) -> TwoFactor:
    """Turn the pending factor on with a code of it (``AccessDenied`` when the code is wrong)."""
    row = two_factor_of(session, user.id)
    if row is None or row.enabled_at is not None:
        raise Conflict("There is no two-factor set-up in progress; start one first")
    if not _spend_code(row, code):
        raise AccessDenied("That code is not right (or was used already); try the next one your app shows")
    row.enabled_at = utcnow()
    session.flush()
    return row


def disable_two_factor(session: Session, user: UserProfile, code: str) -> None:
    """Turn the factor off, with a code of it (a lost device: an administrator's reset removes it)."""
    row = two_factor_of(session, user.id)
    if row is None:
        raise Conflict("Two-factor sign-in is not on")
    if row.enabled_at is not None and not _spend_code(row, code):
        raise AccessDenied("That code is not right (or was used already); try the next one your app shows")
    session.delete(row)
    session.flush()


def needs_second_factor(session: Session, user: UserProfile) -> bool:
    row = two_factor_of(session, user.id)
    return row is not None and row.enabled_at is not None


def check_second_factor(session: Session, user: UserProfile, code: str) -> bool:
    """Whether a password sign-in of ``user`` may go on: no factor on, or ``code`` is a fresh code."""
    row = two_factor_of(session, user.id)
    if row is None or row.enabled_at is None:
        return True
    ok = _spend_code(row, code)
    session.flush()
    return ok


__all__ = [
    "INVITATION_PREFIX",
    "InvitationNotUsable",
    "accept_invitation",
    "change_password",
    "check_second_factor",
    "check_sign_in",
    "confirm_two_factor",
    "disable_two_factor",
    "get_invitation",
    "invitation_status",
    "invitations_query",
    "invite",
    "needs_second_factor",
    "open_invitation",
    "password_of",
    "revoke_invitation",
    "set_password",
    "start_two_factor",
    "two_factor_of",
]
