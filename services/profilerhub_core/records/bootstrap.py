"""First start: the reserved domain ``system`` and its platform administrator ``admin``."""

from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy.orm import Session

from profilerhub_core.db.models import SYSTEM_DOMAIN, ApiToken, Role, utcnow
from profilerhub_core.records.audit import record_audit
from profilerhub_core.records.domains import create_domain, get_domain
from profilerhub_core.records.tokens import issue_token
from profilerhub_core.records.users import create_user, get_user
from profilerhub_core.security import hash_token

ADMIN_USER = "admin"
ENV_TOKEN_NOTE = "PROFILERHUB_ADMIN_TOKEN"


def bootstrap_admin(session: Session, admin_token: str | None = None) -> str | None:
    """Make sure the platform administrator exists and can log in; flushes, the caller commits.

    With ``admin_token`` (from ``PROFILERHUB_ADMIN_TOKEN``) that value becomes the admin's token and
    a previous value stops working. Without it, the first start issues a token and returns its
    secret (shown once by the caller); later starts return ``None``.
    """
    domain = get_domain(session, SYSTEM_DOMAIN) or create_domain(session, SYSTEM_DOMAIN)
    admin = get_user(session, domain, ADMIN_USER)
    created = admin is None
    if admin is None:
        admin = create_user(session, domain, ADMIN_USER, Role.admin)
        record_audit(
            session,
            actor="system",
            action="CreateUserProfile",
            target_type="UserProfile",
            target=f"{SYSTEM_DOMAIN}/{ADMIN_USER}",
            domain=SYSTEM_DOMAIN,
            detail={"bootstrap": True},
        )
    if admin_token:
        wanted = hash_token(admin_token)
        env_tokens = session.scalars(
            sa.select(ApiToken).where(ApiToken.user_id == admin.id, ApiToken.note == ENV_TOKEN_NOTE)
        ).all()
        for token in env_tokens:
            if token.token_hash == wanted:
                token.revoked_at = None  # set again after a change: valid again
            elif token.revoked_at is None:
                token.revoked_at = utcnow()
        if not any(t.token_hash == wanted for t in env_tokens):
            issue_token(session, admin, note=ENV_TOKEN_NOTE, secret=admin_token)
        session.flush()
        return None
    if created:
        _, secret = issue_token(session, admin, note="first start")
        return secret
    return None


__all__ = ["ADMIN_USER", "bootstrap_admin"]
