"""``TestOpenIDProvider``: a real OpenID Connect provider on loopback, for tests only.

It speaks the parts of OpenID Connect Core and Discovery a relying party uses (discovery document,
JWKS, the authorization endpoint, the token endpoint), over real HTTP, and signs real RS256 ID
tokens with joserfc. It is a *test* provider: it has no login page and signs in at once whoever
the test put in ``next_claims``. It checks what a strict provider checks of the hub: the client id
and its registered redirect URI, ``response_type=code`` and the ``openid`` scope, a PKCE S256
challenge, the client secret (HTTP Basic), that a code is used once, by the client it was made
for, with the same redirect URI and the verifier matching its challenge.

Misbehaviours, set ``provider.misbehave`` before a sign-in (each named for what it does):

    "wrong_state"      redirects back with a state the hub never sent
    "wrong_nonce"      puts another nonce in the ID token
    "wrong_audience"   issues the ID token to another client
    "wrong_issuer"     names another issuer in the ID token
    "expired"          issues an ID token that expired an hour ago
    "foreign_key"      signs the ID token with a key not in its JWKS

    provider = TestOpenIDProvider.start()
    provider.next_claims = {"preferred_username": "alice", "groups": ["ml-team"]}
    ...
    provider.stop()
"""

from __future__ import annotations

import base64
import hashlib
import json
import secrets
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

from joserfc import jwt
from joserfc.jwk import KeySet, RSAKey

CLIENT_ID = "profilerhub-test"
CLIENT_SECRET = "test-client-secret-0123456789"
MISBEHAVIOURS = frozenset(
    {"wrong_state", "wrong_nonce", "wrong_audience", "wrong_issuer", "expired", "foreign_key"}
)


def s256(verifier: str) -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()


@dataclass
class _Grant:
    redirect_uri: str
    challenge: str
    nonce: str
    claims: dict[str, Any]
    misbehave: str | None


@dataclass
class TestOpenIDProvider:
    """See the module docstring. ``redirect_uris`` are the hub's registered callback URLs."""

    server: ThreadingHTTPServer
    redirect_uris: set[str] = field(default_factory=set)
    next_claims: dict[str, Any] = field(default_factory=dict)
    misbehave: str | None = None
    key: RSAKey = field(default_factory=lambda: RSAKey.generate_key(2048, parameters={"kid": "test-1"}))
    foreign_key: RSAKey = field(
        default_factory=lambda: RSAKey.generate_key(2048, parameters={"kid": "test-1"})
    )
    grants: dict[str, _Grant] = field(default_factory=dict)
    refusals: list[str] = field(default_factory=list)  # why the provider refused a request of the hub
    token_requests: int = 0

    __test__ = False  # not a pytest test class, despite its name

    @property
    def issuer(self) -> str:
        host, port = self.server.server_address[:2]
        return f"http://{host!s}:{port}"

    @classmethod
    def start(cls) -> TestOpenIDProvider:
        server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        provider = cls(server)
        server.provider = provider  # type: ignore[attr-defined]
        threading.Thread(target=server.serve_forever, daemon=True).start()
        return provider

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    # -- the endpoints --------------------------------------------------------------------------

    def discovery(self) -> dict[str, Any]:
        return {
            "issuer": self.issuer,
            "authorization_endpoint": f"{self.issuer}/authorize",
            "token_endpoint": f"{self.issuer}/token",
            "jwks_uri": f"{self.issuer}/jwks",
            "response_types_supported": ["code"],
            "subject_types_supported": ["public"],
            "id_token_signing_alg_values_supported": ["RS256"],
            "code_challenge_methods_supported": ["S256"],
            "token_endpoint_auth_methods_supported": ["client_secret_basic"],
        }

    def jwks(self) -> dict[str, Any]:
        return KeySet([self.key]).as_dict(private=False)

    def authorize(self, query: dict[str, str]) -> tuple[int, str]:
        """(status, redirect location or refusal text) for an authorization request."""
        problems = [
            ("client_id", query.get("client_id") != CLIENT_ID),
            ("redirect_uri", query.get("redirect_uri") not in self.redirect_uris),
            ("response_type", query.get("response_type") != "code"),
            ("scope", "openid" not in query.get("scope", "").split()),
            ("code_challenge_method", query.get("code_challenge_method") != "S256"),
            ("code_challenge", not query.get("code_challenge")),
            ("state", not query.get("state")),
            ("nonce", not query.get("nonce")),
        ]
        bad = [name for name, wrong in problems if wrong]
        if bad:
            self.refusals.append(f"authorize: {', '.join(bad)}")
            return 400, f"bad authorization request: {', '.join(bad)}"
        code = secrets.token_urlsafe(24)
        self.grants[code] = _Grant(
            query["redirect_uri"],
            query["code_challenge"],
            query["nonce"],
            dict(self.next_claims),
            self.misbehave,
        )
        state = "forged-" + secrets.token_urlsafe(8) if self.misbehave == "wrong_state" else query["state"]
        return 302, f"{query['redirect_uri']}?{urlencode({'code': code, 'state': state})}"

    def token(self, form: dict[str, str], authorization: str) -> tuple[int, dict[str, Any]]:
        self.token_requests += 1
        expected = "Basic " + base64.b64encode(f"{CLIENT_ID}:{CLIENT_SECRET}".encode()).decode()
        if authorization != expected:
            return self._refuse("invalid_client", "client authentication failed")
        grant = self.grants.pop(form.get("code", ""), None)  # a code works once
        if form.get("grant_type") != "authorization_code" or grant is None:
            return self._refuse("invalid_grant", "unknown or used code")
        if form.get("redirect_uri") != grant.redirect_uri:
            return self._refuse("invalid_grant", "redirect_uri differs from the authorization request's")
        if s256(form.get("code_verifier", "")) != grant.challenge:
            return self._refuse("invalid_grant", "PKCE verifier does not match the challenge")
        return 200, {
            "access_token": secrets.token_urlsafe(24),
            "token_type": "Bearer",
            "expires_in": 300,
            "id_token": self.id_token(grant),
        }

    def _refuse(self, error: str, description: str) -> tuple[int, dict[str, Any]]:
        self.refusals.append(f"token: {description}")
        return 400, {"error": error, "error_description": description}

    def id_token(self, grant: _Grant) -> str:
        now, wrong = int(time.time()), grant.misbehave
        claims = {
            "iss": "http://evil.example" if wrong == "wrong_issuer" else self.issuer,
            "aud": "another-client" if wrong == "wrong_audience" else CLIENT_ID,
            "sub": f"sub-{grant.claims.get('preferred_username', 'anyone')}",
            "iat": now - 7200 if wrong == "expired" else now,
            "exp": now - 3600 if wrong == "expired" else now + 300,
            "nonce": "another-nonce" if wrong == "wrong_nonce" else grant.nonce,
            **grant.claims,
        }
        key = self.foreign_key if wrong == "foreign_key" else self.key
        return jwt.encode({"alg": "RS256", "kid": "test-1"}, claims, key)


class _Handler(BaseHTTPRequestHandler):
    server: ThreadingHTTPServer

    @property
    def provider(self) -> TestOpenIDProvider:
        return self.server.provider  # type: ignore[attr-defined,no-any-return]

    def do_GET(self) -> None:  # noqa: N802
        parts = urlsplit(self.path)
        query = {k: v[0] for k, v in parse_qs(parts.query).items()}
        if parts.path == "/.well-known/openid-configuration":
            self._json(200, self.provider.discovery())
        elif parts.path == "/jwks":
            self._json(200, self.provider.jwks())
        elif parts.path == "/authorize":
            status, target = self.provider.authorize(query)
            self.send_response(status)
            if status == 302:
                self.send_header("location", target)
            self.send_header("content-type", "text/plain")
            self.end_headers()
            self.wfile.write(target.encode() if status != 302 else b"")
        else:
            self._json(404, {"error": "not_found"})

    def do_POST(self) -> None:  # noqa: N802
        length = int(self.headers.get("content-length") or 0)
        form = {k: v[0] for k, v in parse_qs(self.rfile.read(length).decode()).items()}
        if urlsplit(self.path).path != "/token":
            self._json(404, {"error": "not_found"})
            return
        self._json(*self.provider.token(form, self.headers.get("authorization", "")))

    def _json(self, status: int, body: dict[str, Any]) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: Any) -> None:
        pass


__all__ = ["CLIENT_ID", "CLIENT_SECRET", "MISBEHAVIOURS", "TestOpenIDProvider", "s256"]
