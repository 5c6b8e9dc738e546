"""First start on a database: make sure the platform admin exists (`up` and `hub` call it)."""

from __future__ import annotations

from sqlalchemy.engine import Engine
from sqlalchemy.exc import IntegrityError

from profilerhub_core.db.session import session_factory
from profilerhub_core.records.bootstrap import bootstrap_admin
from profilerhub_core.settings import Settings, write_private_file

ADMIN_TOKEN_FILE = "admin-token"


def first_start(settings: Settings, engine: Engine) -> str | None:
    """Create the platform administrator ``admin`` if missing.

    Returns the new token's secret on the very first start (and writes it to
    ``<home>/admin-token``, mode 0600), else ``None``. ``PROFILERHUB_ADMIN_TOKEN``, when set, is
    the admin's token instead and nothing is generated.
    """
    configured = settings.admin_token.get_secret_value() if settings.admin_token else None
    with session_factory(engine)() as session:
        try:
            secret = bootstrap_admin(session, configured)
            session.commit()
        except IntegrityError:  # another hub process bootstrapped at the same moment
            session.rollback()
            return None
    if secret is not None:
        settings.home.mkdir(parents=True, exist_ok=True)
        write_private_file(settings.home / ADMIN_TOKEN_FILE, secret + "\n")
    return secret


__all__ = ["ADMIN_TOKEN_FILE", "first_start"]
