"""OpenID Connect sign-in: the authorization-code flow with PKCE, through authlib's OAuth 2 client.

    GET /console/oidc/sign-in    -> the provider's authorization endpoint (state, nonce, PKCE S256)
    GET /console/oidc/callback   <- the provider's redirect (code, state) -> ID token -> a session

The flow's secrets live in the browser, not in one hub process: ``/sign-in`` sets the cookie
``profilerhub_oidc`` (path ``/console/oidc/``, 10 minutes, HttpOnly, SameSite=Lax, signed with the
hub's key) holding the ``state``, the ``nonce`` and the PKCE ``code_verifier``; any replica can
finish a sign-in another began. The callback refuses, and audits, unless:

- the ``state`` it is given is the cookie's (so a provider redirect made for someone else's
  browser, a login-CSRF, never signs this one in);
- the answer's ``iss``, when the provider sends one (RFC 9207; required when discovery says it
  does), is the configured issuer;
- the provider exchanges the code for tokens with the cookie's ``code_verifier`` (PKCE);
- the ID token's signature verifies against the provider's JWKS, ``iss`` is the configured issuer
  (and the one discovery announced), ``aud`` contains our client id (and ``azp`` is it when there
  are several audiences), ``exp``/``iat`` hold within ``oidc_leeway_seconds``, and ``nonce`` is
  the cookie's (so a replayed ID token does not sign in);
- the user-name claim (from the ID token, else from the userinfo endpoint, whose ``sub`` must be
  the ID token's: a code flow's ID token may carry ``sub`` alone) is a valid user name, the domain
  claim maps to a domain (``oidc_domain_map``, else ``oidc_default_domain``), and the user exists
  there, or the domain creates users on first sign-in (``DomainSettings.create_users_on_sign_in``;
  such users get the role ``user``).

The session is an ordinary console session (``via`` ``oidc``) with every scope of its user.
Discovery and the JWKS are fetched once per process and kept an hour (an unknown ``kid`` refetches
the JWKS at once, for key rotation). ``httpx`` and ``joserfc`` are imported by the first sign-in,
not by the hub's start.
"""

from __future__ import annotations

import base64
import secrets
import threading
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import quote_plus, urlsplit

from profilerhub_core.errors import InvalidInput, Unauthorized
from profilerhub_core.names import is_valid_name
from profilerhub_core.pagination import decode_page_token, encode_page_token
from profilerhub_core.settings import Settings

if TYPE_CHECKING:
    from joserfc.jwk import KeySet

FLOW_COOKIE = "profilerhub_oidc"
FLOW_PATH = "/console/oidc/"
START_PATH = "/console/oidc/sign-in"
CALLBACK_PATH = "/console/oidc/callback"
FLOW_SECONDS = 600
METADATA_SECONDS = 3600
_FLOW_SCOPE = "oidc-flow"
# Asymmetric signatures only: an HS256 ID token would be signed with our client secret, which a
# public client does not have and which must never double as a verification key here.
ALGORITHMS = ["RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"]


class SignInRefused(Unauthorized):
    """The provider's answer does not sign anyone in; ``reason`` goes to the audit log."""

    def __init__(self, message: str, reason: str, status: int = 401) -> None:
        super().__init__(message)
        self.reason = reason
        self.status = status  # 403: the provider vouched for them, but they may not use this hub


@dataclass(frozen=True, slots=True)
class Flow:
    state: str
    nonce: str
    code_verifier: str


@dataclass(frozen=True, slots=True)
class Identity:
    """Who the provider says signed in, and where they belong."""

    user_name: str
    domain_name: str
    subject: str


def provider_name(settings: Settings) -> str:
    return settings.oidc_provider_name or urlsplit(settings.oidc_issuer).hostname or "your provider"


def redirect_uri(settings: Settings) -> str:
    return settings.public_url + CALLBACK_PATH


def new_flow() -> Flow:
    return Flow(secrets.token_urlsafe(24), secrets.token_urlsafe(24), secrets.token_urlsafe(48))


def flow_cookie(settings: Settings, flow: Flow) -> str:
    values = [flow.state, flow.nonce, flow.code_verifier, int(time.time()) + FLOW_SECONDS]
    return encode_page_token(settings.signing_key(), _FLOW_SCOPE, values)


def read_flow(settings: Settings, cookie: str | None) -> Flow:
    """The flow this browser began; ``SignInRefused`` when there is none (or it expired)."""
    values: list[Any] = []
    if cookie:
        try:
            values = decode_page_token(settings.signing_key(), _FLOW_SCOPE, cookie)
        except InvalidInput:
            values = []
    if len(values) != 4 or not isinstance(values[3], int) or values[3] < time.time():
        raise SignInRefused(
            "This sign-in was not started from this browser, or took too long; sign in again",
            "no sign-in in progress in this browser",
        )
    return Flow(str(values[0]), str(values[1]), str(values[2]))


def _client_secret_basic(client: Any, method: str, uri: str, headers: dict[str, str], body: str) -> Any:
    """HTTP Basic client authentication as RFC 6749 §2.3.1 has it: the id and the secret are each
    form-encoded first. authlib sends them raw, so a secret holding ``+``, ``%``, ``/`` or ``=``
    (as some providers generate) reached a strict provider (oidc-provider) changed, and was refused."""
    pair = f"{quote_plus(client.client_id)}:{quote_plus(client.client_secret)}"
    headers["Authorization"] = "Basic " + base64.b64encode(pair.encode()).decode("ascii")
    return uri, headers, body


class OpenIDClient:
    """The provider's metadata and keys (cached), and the two steps of a sign-in."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._lock = threading.Lock()
        self._metadata: dict[str, Any] | None = None
        self._keys: KeySet | None = None
        self._fetched = float("-inf")

    # -- what the provider announces --------------------------------------------------------------

    def metadata(self) -> dict[str, Any]:
        with self._lock:
            if self._metadata is None or time.monotonic() - self._fetched > METADATA_SECONDS:
                url = self.settings.oidc_issuer.rstrip("/") + "/.well-known/openid-configuration"
                document = self._get_json(url, "discovery document")
                if document.get("issuer") != self.settings.oidc_issuer:
                    raise SignInRefused(
                        "The sign-in provider is misconfigured; tell your administrator",
                        f"discovery names issuer {document.get('issuer')!r}, not the configured one",
                    )
                self._metadata, self._keys, self._fetched = document, None, time.monotonic()
            return self._metadata

    def keys(self, refresh: bool = False) -> KeySet:
        from joserfc.jwk import KeySet

        metadata = self.metadata()
        with self._lock:
            if self._keys is None or refresh:
                self._keys = KeySet.import_key_set(self._get_json(metadata["jwks_uri"], "key set"))  # type: ignore[arg-type]
            return self._keys

    def _get_json(self, url: str, what: str, headers: dict[str, str] | None = None) -> dict[str, Any]:
        import httpx

        try:
            answer = httpx.get(url, headers=headers, timeout=10.0)
            answer.raise_for_status()
            document = answer.json()
        except (httpx.HTTPError, ValueError) as exc:
            raise SignInRefused(
                "The sign-in provider is not answering; try again shortly", f"{what} unavailable: {exc}"
            ) from exc
        if not isinstance(document, dict):
            raise SignInRefused("The sign-in provider is misconfigured", f"{what} is not a JSON object")
        return document

    def _client(self) -> Any:
        from authlib.integrations.httpx_client import OAuth2Client

        secret = self.settings.oidc_client_secret
        client = OAuth2Client(
            client_id=self.settings.oidc_client_id,
            client_secret=secret.get_secret_value() if secret else None,
            token_endpoint_auth_method="client_secret_basic" if secret else "none",
            scope=self.settings.oidc_scopes,
            redirect_uri=redirect_uri(self.settings),
            code_challenge_method="S256",
            timeout=10.0,
        )
        client.register_client_auth_method(("client_secret_basic", _client_secret_basic))
        return client

    # -- the two steps ----------------------------------------------------------------------------

    def authorization_url(self, flow: Flow) -> str:
        with self._client() as client:
            url, _ = client.create_authorization_url(
                self.metadata()["authorization_endpoint"],
                state=flow.state,
                nonce=flow.nonce,
                code_verifier=flow.code_verifier,
            )
        return str(url)

    def finish(self, flow: Flow, query: dict[str, str]) -> dict[str, Any]:
        """The verified ID token claims of the provider's redirect ``query``."""
        if "error" in query:
            raise SignInRefused(
                f"The sign-in provider refused: {query.get('error_description') or query['error']}",
                f"provider error {query['error']!r}",
            )
        if not secrets.compare_digest(query.get("state", ""), flow.state):
            raise SignInRefused(
                "This sign-in answer is not for this browser; sign in again", "state mismatch"
            )
        # RFC 9207: a provider that names itself in its answer must name the configured issuer
        # (an answer from another provider, mixed up into this flow, is refused before its code
        # is sent anywhere).
        issuer = self.settings.oidc_issuer
        announced = self.metadata().get("authorization_response_iss_parameter_supported") is True
        if query.get("iss", None if announced else issuer) != issuer:
            raise SignInRefused(
                "This sign-in answer did not come from this hub's provider; sign in again",
                f"authorization response issuer {query.get('iss')!r} is not the configured one",
            )
        code = query.get("code", "")
        if not code:
            raise SignInRefused("The sign-in provider sent no code; sign in again", "no code")
        import httpx
        from authlib.integrations.base_client.errors import OAuthError

        try:
            with self._client() as client:
                tokens = client.fetch_token(
                    self.metadata()["token_endpoint"],
                    grant_type="authorization_code",
                    code=code,
                    code_verifier=flow.code_verifier,
                )
        except (OAuthError, httpx.HTTPError, ValueError) as exc:
            raise SignInRefused(
                "The sign-in provider did not accept this sign-in; try again", f"token exchange failed: {exc}"
            ) from exc
        id_token = tokens.get("id_token")
        if not isinstance(id_token, str):
            raise SignInRefused("The sign-in provider sent no ID token", "no id_token in the token answer")
        claims = self.verify(id_token, flow.nonce)
        wanted = [self.settings.oidc_username_claim, self.settings.oidc_domain_claim]
        if any(name and name not in claims for name in wanted):
            # OpenID Connect Core §5.4: a code flow's ID token may carry `sub` alone (oidc-provider's
            # default), the profile's claims being the userinfo endpoint's to give.
            claims = {**self.userinfo(str(tokens.get("access_token") or ""), str(claims["sub"])), **claims}
        return claims

    def userinfo(self, access_token: str, subject: str) -> dict[str, Any]:
        """The userinfo endpoint's claims about ``subject`` (§5.3: its ``sub`` must be the ID token's)."""
        endpoint = self.metadata().get("userinfo_endpoint")
        if not endpoint or not access_token:
            return {}
        document = self._get_json(str(endpoint), "userinfo", {"Authorization": f"Bearer {access_token}"})
        if document.get("sub") != subject:
            raise SignInRefused(
                "The sign-in provider's answer is not valid for this hub", "userinfo names another subject"
            )
        return document

    def verify(self, id_token: str, nonce: str) -> dict[str, Any]:
        from joserfc import jwt
        from joserfc.errors import (
            ExpiredTokenError,
            InvalidClaimError,
            InvalidKeyIdError,
            JoseError,
            MissingClaimError,
        )

        try:
            try:
                token = jwt.decode(id_token, self.keys(), algorithms=ALGORITHMS)
            except InvalidKeyIdError:  # an unknown key id: the provider may have rotated its keys
                token = jwt.decode(id_token, self.keys(refresh=True), algorithms=ALGORITHMS)
            claims = dict(token.claims)
            jwt.JWTClaimsRegistry(
                leeway=self.settings.oidc_leeway_seconds,
                iss={"essential": True, "value": self.settings.oidc_issuer},
                aud={"essential": True, "value": self.settings.oidc_client_id},
                sub={"essential": True},
                exp={"essential": True},
                iat={"essential": True},
                nonce={"essential": True},
            ).validate(claims)
        except ExpiredTokenError as exc:
            raise SignInRefused("The sign-in expired on its way; sign in again", "ID token expired") from exc
        except (InvalidClaimError, MissingClaimError) as exc:
            raise SignInRefused(
                "The sign-in provider's answer is not valid for this hub", f"ID token refused: {exc}"
            ) from exc
        except (JoseError, ValueError) as exc:
            raise SignInRefused(
                "The sign-in provider's answer could not be verified", f"ID token not verified: {exc}"
            ) from exc
        audiences = claims["aud"] if isinstance(claims["aud"], list) else [claims["aud"]]
        if len(audiences) > 1 and claims.get("azp") != self.settings.oidc_client_id:
            raise SignInRefused(
                "The sign-in provider's answer is not valid for this hub", "azp is not our client"
            )
        if not secrets.compare_digest(str(claims["nonce"]), nonce):
            raise SignInRefused("This sign-in answer was already used or is not yours", "nonce mismatch")
        return claims

    # -- who it is --------------------------------------------------------------------------------

    def identity(self, claims: dict[str, Any]) -> Identity:
        """The user name and domain the claims map to (``SignInRefused`` if they map to none)."""
        settings = self.settings
        name = claims.get(settings.oidc_username_claim)
        if not isinstance(name, str) or not is_valid_name(name):
            raise SignInRefused(
                f"Your account's {settings.oidc_username_claim!r} ({name!r}) is not a valid user name here; "
                "tell your administrator",
                f"claim {settings.oidc_username_claim!r} is not a valid name",
            )
        domain = settings.oidc_default_domain
        if settings.oidc_domain_claim:
            value = claims.get(settings.oidc_domain_claim)
            values = value if isinstance(value, list) else [value]
            domain = next(
                (settings.oidc_domain_map[v] for v in values if v in settings.oidc_domain_map), domain
            )
        if not domain:
            raise SignInRefused(
                f"Your account ({name}) belongs to no domain of this hub; ask an administrator",
                f"claim {settings.oidc_domain_claim!r} maps to no domain",
                403,
            )
        return Identity(name, domain, str(claims["sub"]))


__all__ = [
    "CALLBACK_PATH",
    "FLOW_COOKIE",
    "FLOW_PATH",
    "START_PATH",
    "Flow",
    "Identity",
    "OpenIDClient",
    "SignInRefused",
    "flow_cookie",
    "new_flow",
    "provider_name",
    "read_flow",
    "redirect_uri",
]
