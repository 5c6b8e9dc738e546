"""The terminal's client of the hub's HTTP API (``/api/v1``), used by the resource commands.

Every failure becomes one :class:`CliFailure` whose message says what happened and what to do
next; :func:`run` prints it as one line (no traceback) and exits 1 (2 for a usage problem, such
as no hub configured).

It speaks through the one client of the hub's API (``profilerhub.hubhttp.HubHTTP``: its user
agent, error parser and retry policy). Tests hand an in-process client in through
``typer.Context.obj`` (``{"http": client}``): any object with ``httpx.Client.request``'s
signature will do, a ``TestClient`` included.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from typing import Any, NoReturn, TypeVar
from urllib.parse import quote

import typer

from profilerhub.cli.hubconfig import ConfigError, HubConfig, config_path
from profilerhub.cli.toolkit import err_console
from profilerhub.hubhttp import API, HubHTTP, HubUnreachable, error_of

T = TypeVar("T")
#: Items asked for per request while paging (the hub's maximum is 1000).
PAGE_SIZE = 200


class CliFailure(Exception):
    """A command failed; ``message`` is shown as is, ``hint`` as what to do next."""

    def __init__(self, message: str, hint: str = "", *, exit_code: int = 1, status: int = 0) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint
        self.exit_code = exit_code
        self.status = status


LOGIN_HINT = "set PROFILERHUB_URL and PROFILERHUB_TOKEN, or run `profilerhub login URL`"


def path(*parts: str) -> str:
    """``/api/v1/…`` with each part quoted as one segment."""
    return API + "".join("/" + quote(p, safe="") for p in parts)


class Hub:
    """One hub and one token; ``request`` raises ``CliFailure``, never an HTTP library's error."""

    def __init__(self, config: HubConfig, http: Any = None, *, anonymous: bool = False) -> None:
        self.config = config
        self.url = config.url or ""
        self._me: dict[str, Any] | None = None
        if http is None:
            if not config.url:
                raise CliFailure("no hub configured", LOGIN_HINT, exit_code=2)
            if "://" not in config.url:
                raise CliFailure(
                    f"the hub URL {config.url!r} (from {config.url_from}) has no scheme",
                    "write it as http://host:port or https://host",
                    exit_code=2,
                )
            if not config.token and not anonymous:
                raise CliFailure(f"no API token for {config.url}", LOGIN_HINT, exit_code=2)
        timeout = float(os.environ.get("PROFILERHUB_TIMEOUT") or 30)
        self._http = HubHTTP(self.url, config.token, component="cli", timeout=timeout, client=http)

    def close(self) -> None:
        self._http.close()

    def request(
        self, method: str, url: str, *, params: dict[str, Any] | None = None, json: Any = None
    ) -> Any:
        """The answer's JSON (``None`` for 204); a refusal raises ``CliFailure``."""
        try:
            resp = self._http.send(method, url, params=params, json=json)
        except HubUnreachable as exc:
            raise CliFailure(
                f"cannot reach the hub at {self.url} ({type(exc.cause).__name__}: {exc.cause})",
                f"is it running (`profilerhub up`)? Check the URL (from {self.config.url_from})",
            ) from None
        if resp.status_code < 300:
            if resp.status_code == 204 or not resp.content:
                return None
            return _json_of(resp, method, url)
        raise self._failure(resp)

    def get(self, url: str, **params: Any) -> Any:
        return self.request("GET", url, params=params)

    def pages(self, url: str, *, limit: int | None = None, **params: Any) -> Iterator[dict[str, Any]]:
        """Every item of a list, following ``next_token`` page by page (at most ``limit`` items)."""
        token: str | None = None
        seen = 0
        while True:
            size = PAGE_SIZE if limit is None else max(1, min(PAGE_SIZE, limit - seen))
            page = self.get(url, limit=size, next_token=token, **params)
            for item in page.get("items") or []:
                if limit is not None and seen >= limit:
                    return
                seen += 1
                yield item
            token = page.get("next_token")
            if not token or (limit is not None and seen >= limit):
                return

    def me(self) -> dict[str, Any]:
        """``GET /me``, asked once."""
        if self._me is None:
            self._me = self.get(path("me"))
        return self._me

    def _failure(self, resp: Any) -> CliFailure:
        status = resp.status_code
        code, message = error_of(resp)
        message = message or "no message"
        said = f"{message} ({status} {code})" if code else f"HTTP {status}: {message}"
        hints = {
            401: f"the token (from {self.config.token_from}) is unknown, revoked or expired: get a new one "
            "(`profilerhub tokens create`, or the console's Tokens page) and run `profilerhub login`",
            403: "your token may not do this; ask an administrator of the domain, or use a token "
            "with the scope it needs",
            404: "check the names (`profilerhub domains list`, `profilerhub users list -d DOMAIN`); "
            "what you may not see answers as missing too",
            413: "the request is larger than the hub accepts",
            429: "wait a little and try again"
            + (f" (after {resp.headers.get('Retry-After')} s)" if resp.headers.get("Retry-After") else ""),
        }
        hint = hints.get(status, "")
        if status >= 500:
            hint = "the hub failed; try again shortly, and check the hub's log if it persists"
        return CliFailure(said, hint, status=status)


def _json_of(resp: Any, method: str, url: str) -> Any:
    try:
        return resp.json()
    except ValueError:
        raise CliFailure(
            f"{method} {url}: the hub answered {resp.status_code} without JSON",
            "is PROFILERHUB_URL the hub's address (not an app's or a proxy's)?",
        ) from None


def connect(ctx: typer.Context) -> Hub:
    """The hub of this invocation: configured from the environment/config file, or ``ctx.obj``'s."""
    obj = ctx.obj if isinstance(ctx.obj, dict) else {}
    try:
        config = HubConfig.load()
    except ConfigError as exc:
        raise CliFailure(str(exc), exit_code=2) from None
    return Hub(config, http=obj.get("http"))


def fail(failure: CliFailure) -> NoReturn:
    err_console.print(f"[red]error:[/red] {failure.message}", highlight=False, soft_wrap=True)
    if failure.hint:
        err_console.print(f"[yellow]what to do:[/yellow] {failure.hint}", highlight=False, soft_wrap=True)
    raise typer.Exit(failure.exit_code)


def run(ctx: typer.Context, work: Callable[[Hub], T]) -> T:
    """Connect, do ``work``, close; a ``CliFailure`` (or a config problem) is printed, not raised."""
    try:
        hub = connect(ctx)
        try:
            return work(hub)
        finally:
            hub.close()
    except CliFailure as failure:
        fail(failure)
    except ConfigError as exc:
        fail(CliFailure(str(exc), exit_code=2))


def confirm(what: str, yes: bool) -> None:
    """Ask before deleting, unless ``--yes``; without a terminal to ask on, refuse."""
    import sys

    if yes:
        return
    if not sys.stdin.isatty():
        raise CliFailure(f"not deleting {what} without confirmation", "pass --yes", exit_code=2)
    if not typer.confirm(f"Delete {what}?", default=False):
        raise CliFailure("not deleted", exit_code=1)


__all__ = ["API", "CliFailure", "Hub", "config_path", "confirm", "connect", "fail", "path", "run"]
