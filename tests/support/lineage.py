"""Browser sessions of every kind, got the way a browser or a script gets them, from a running hub.

    browser = Browser(hub_url, public_url)
    console = browser.sign_in_with_token(token)            # the sign-in form (login-CSRF and all)
    console = browser.password_session(domain, user, pw)   # the same form, by name and password
    console = browser.redeem(path)["profilerhub_console"]  # a presigned sign-in link's path
    browser.console_status(console)                        # GET /api/v1/me with the cookie
    browser.app_status(app_id, app_cookie)                 # GET /apps/{id}/ with the app's cookie
    browser.bearer_status(token)                           # GET /api/v1/me with the bearer token

Every request goes out from ``address`` (a loopback address of the test's own), so the rate
limits a case's refusals count toward are its own.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import httpx

CONSOLE_COOKIE, APP_COOKIE = "profilerhub_console", "profilerhub_session"
_SIGNIN = re.compile(r'name="signin" value="([^"]+)"')
_CSRF = re.compile(r'<meta name="csrf-token" content="([^"]+)"')


def path_of(url: str) -> str:
    """A link's path and query (either replica may redeem it)."""
    for prefix in ("/console/", "/apps/"):
        if prefix in url:
            return url[url.index(prefix) :]
    raise AssertionError(f"not a hub link: {url}")


def cookies_set(answer: httpx.Response) -> dict[str, str]:
    """The cookies an answer sets (name -> value), deletions left out."""
    found = {}
    for header in answer.headers.get_list("set-cookie"):
        name, _, rest = header.partition("=")
        value = rest.split(";", 1)[0].strip('"')
        if value and "max-age=0" not in header.lower():
            found[name.strip()] = value
    return found


@dataclass
class Browser:
    """A client of one hub, from one loopback address, sending ``Origin: public_url``."""

    url: str
    public_url: str
    address: str = "127.0.0.1"

    def _client(self, **options: Any) -> httpx.Client:
        transport = httpx.HTTPTransport(local_address=self.address)
        return httpx.Client(
            base_url=self.url, transport=transport, timeout=30, follow_redirects=False, **options
        )

    def sign_in(self, **fields: str) -> httpx.Response:
        """POST the console's sign-in form with ``fields``; the answer (303 with the cookie, or not)."""
        with self._client() as client:
            page = client.get("/console/sign-in")
            match = _SIGNIN.search(page.text)
            assert page.status_code == 200 and match, page.text
            data = {"signin": match.group(1), **fields}
            return client.post("/console/sign-in", data=data, headers={"origin": self.public_url})

    def sign_in_with_token(self, token: str) -> httpx.Response:
        return self.sign_in(token=token)

    def console_session(self, token: str) -> str:
        return self._cookie(self.sign_in_with_token(token))

    def password_session(self, domain: str, user: str, password: str) -> str:
        """A console session from the form's name-and-password sign-in (local accounts)."""
        return self._cookie(self.sign_in(method="password", domain=domain, user=user, password=password))

    @staticmethod
    def _cookie(answer: httpx.Response) -> str:
        assert answer.status_code == 303, answer.text
        return cookies_set(answer)[CONSOLE_COOKIE]

    def redeem(self, path: str) -> httpx.Response:
        """Open a one-time link (a console sign-in link, or an app's ``_hub/login``)."""
        with self._client() as client:
            return client.get(path)

    def redeemed(self, path: str) -> dict[str, str]:
        answer = self.redeem(path)
        assert answer.status_code == 303, answer.text
        return cookies_set(answer)

    def console_status(self, cookie: str) -> int:
        with self._client(cookies={CONSOLE_COOKIE: cookie}) as client:
            return client.get("/api/v1/me").status_code

    def bearer_status(self, token: str) -> int:
        with self._client(headers={"Authorization": f"Bearer {token}"}) as client:
            return client.get("/api/v1/me").status_code

    def app_status(self, app_id: str, cookie: str) -> int:
        with self._client(cookies={APP_COOKIE: cookie}) as client:
            return client.get(f"/apps/{app_id}/").status_code

    def console_post(self, cookie: str, path: str, body: dict[str, Any]) -> httpx.Response:
        """A state-changing API call from the console's page: cookie, Origin and CSRF token."""
        with self._client(cookies={CONSOLE_COOKIE: cookie}) as client:
            page = client.get("/console/")
            match = _CSRF.search(page.text)
            assert page.status_code == 200 and match, page.text
            headers = {"origin": self.public_url, "x-csrf-token": match.group(1)}
            return client.post(f"/api/v1{path}", json=body, headers=headers)


__all__ = ["APP_COOKIE", "CONSOLE_COOKIE", "Browser", "cookies_set", "path_of"]
