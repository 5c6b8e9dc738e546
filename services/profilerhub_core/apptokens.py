"""Hub-signed tokens that let a request into one user's profiler app.

The hub holds an Ed25519 private key and mints a short-lived JWT for every request it proxies
to an app (audience = the app id, subject = the owner's user id).  The app holds only the
public key and checks the token on every request, so an app reached directly on its port is as
closed as one reached through the hub.

This module imports only ``joserfc`` (and ``cryptography`` through it): the app process loads it
and must stay small.
"""

from __future__ import annotations

import os
import time
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any

from joserfc import jwt
from joserfc.errors import JoseError
from joserfc.jwk import OKPKey

from profilerhub_core.errors import Unauthorized

if TYPE_CHECKING:
    from profilerhub_core.settings import Settings

ALGORITHM = "Ed25519"
ISSUER = "profilerhub-hub"
DEFAULT_TTL_SECONDS = 60
KEY_FILE = "app-token-key.pem"
_LEEWAY_SECONDS = 5


def generate_signing_key() -> OKPKey:
    """A new Ed25519 private key."""
    return OKPKey.generate_key("Ed25519", private=True)


def load_or_create_signing_key(path: Path) -> OKPKey:
    """Load the hub's private key from ``path`` (PEM), creating it with mode 0600 if missing."""
    if path.exists():
        return OKPKey.import_key(path.read_bytes())
    path.parent.mkdir(parents=True, exist_ok=True)
    key = generate_signing_key()
    pem = key.as_pem(private=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as fh:
        fh.write(pem)
    try:
        os.link(tmp, path)  # atomic and refuses to overwrite: two hubs starting at once agree
    except FileExistsError:
        pass
    finally:
        tmp.unlink()
    return OKPKey.import_key(path.read_bytes())


def load_signing_key(pem: str) -> OKPKey:
    """A private key given as PEM text (from a setting or a mounted secret)."""
    key = OKPKey.import_key(pem.encode())
    if not key.is_private:
        raise ValueError("the app-token signing key must be a private Ed25519 key")
    return key


def hub_signing_key(settings: Settings) -> OKPKey:
    """The hub's key: ``PROFILERHUB_APP_TOKEN_PRIVATE_KEY`` if set, else ``<home>/app-token-key.pem``."""
    if settings.app_token_private_key is not None:
        return load_signing_key(settings.app_token_private_key.get_secret_value())
    return load_or_create_signing_key(settings.home / KEY_FILE)


def public_key_pem(key: OKPKey) -> str:
    """The PEM text of the public half of ``key``: what an app is given."""
    return key.as_pem(private=False).decode()


def load_public_key(pem: str) -> OKPKey:
    """Import the public key an app checks tokens with."""
    return OKPKey.import_key(pem.encode())


def issue_app_token(key: OKPKey, app_id: str, owner: str, ttl: int = DEFAULT_TTL_SECONDS) -> str:
    """Mint a token that opens app ``app_id`` for its owner (user id ``owner``) for ``ttl`` seconds."""
    now = int(time.time())
    claims = {
        "iss": ISSUER,
        "aud": app_id,
        "sub": owner,
        "iat": now,
        "exp": now + ttl,
        "jti": uuid.uuid4().hex,
    }
    return jwt.encode({"alg": ALGORITHM}, claims, key, algorithms=[ALGORITHM])


def verify_app_token(public_key: OKPKey, token: str, app_id: str, owner: str) -> dict[str, Any]:
    """Return the claims of ``token`` if the hub signed it for this app and owner and it is current.

    Raises ``Unauthorized`` otherwise (bad signature, other algorithm, other audience or
    subject, expired, malformed), never anything else.
    """
    try:
        decoded = jwt.decode(token, public_key, algorithms=[ALGORITHM])
        registry = jwt.JWTClaimsRegistry(
            leeway=_LEEWAY_SECONDS,
            iss={"essential": True, "value": ISSUER},
            aud={"essential": True, "value": app_id},
            sub={"essential": True, "value": owner},
            exp={"essential": True},
        )
        registry.validate(decoded.claims)
    except (JoseError, ValueError, TypeError) as exc:
        raise Unauthorized("invalid or expired app token") from exc
    return dict(decoded.claims)


__all__ = [
    "DEFAULT_TTL_SECONDS",
    "generate_signing_key",
    "hub_signing_key",
    "issue_app_token",
    "load_or_create_signing_key",
    "load_public_key",
    "load_signing_key",
    "public_key_pem",
    "verify_app_token",
]
