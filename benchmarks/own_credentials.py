"""How a benchmark gets a user's own credential, the way a person does (no impersonation): an
administrator invites the user (``POST …/invitations``), the user chooses a password with the link
(``POST /sign-in/invitation``, what ``profilerhub login --invitation`` calls) and gets a token of
their own. A token an administrator made for them could not open their apps.

    from own_credentials import own_token
    headers = {"Authorization": f"Bearer {own_token(client, admin_headers, 'bench', 'alice')}"}
"""

from __future__ import annotations

import secrets

import httpx


def own_token(client: httpx.Client, admin: dict[str, str], domain: str, user: str) -> str:
    """A new token of ``domain/user``'s own; ``client``'s base URL is the hub (``/api/v1`` below it)."""
    invited = client.post(f"/api/v1/domains/{domain}/users/{user}/invitations", json={}, headers=admin)
    invited.raise_for_status()
    body = {"invitation": invited.json()["url"], "password": secrets.token_urlsafe(18), "note": "benchmark"}
    accepted = client.post("/api/v1/sign-in/invitation", json=body)
    accepted.raise_for_status()
    return str(accepted.json()["token"])


__all__ = ["own_token"]
