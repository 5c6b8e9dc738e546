"""``profilerhub login``, ``config`` and ``whoami``: which hub the terminal commands talk to.

``login`` checks the token against the hub (``GET /me``) before it writes anything, so the file
never holds a URL or token that does not work. With ``--user DOMAIN/NAME`` it signs in with that
local account's password instead (``POST /sign-in/password``) and saves the new token of the
user's own that the hub answers with. See :mod:`profilerhub.cli.hubconfig` for the file.
"""

from __future__ import annotations

import os
import platform
import sys
from enum import StrEnum
from typing import Annotated, Any
from urllib.parse import urlsplit

import typer

from profilerhub.cli.hubapi import CliFailure, Hub, fail, path, run
from profilerhub.cli.hubconfig import ENV, ConfigError, HubConfig, config_path, mask, read_file, write_file
from profilerhub.cli.output import Output, OutputOption, details, emit
from profilerhub.cli.resources import app_group

config_app = app_group("config", "Show or change where the terminal commands find the hub.")


class Key(StrEnum):
    url = "url"
    token = "token"


def login(
    ctx: typer.Context,
    url: Annotated[
        str | None,
        typer.Argument(
            metavar="URL",
            show_default="PROFILERHUB_URL, or the saved URL",
            help="The hub, e.g. http://127.0.0.1:8080.",
        ),
    ] = None,
    token: Annotated[
        str | None,
        typer.Option(
            metavar="TOKEN",
            show_default="asked for",
            help="An API token (the console's Tokens page, or `profilerhub tokens create`).",
        ),
    ] = None,
    user: Annotated[
        str | None,
        typer.Option(
            "--user",
            "-u",
            metavar="DOMAIN/NAME",
            help="Sign in with this local account's password instead of a token (a new token of "
            "yours is made and saved).",
        ),
    ] = None,
    invitation: Annotated[
        str | None,
        typer.Option(
            "--invitation",
            metavar="LINK",
            help="Use the invitation link your administrator sent: choose your password, and a new "
            "token of yours is made and saved (URL defaults to the link's hub).",
        ),
    ] = None,
    password_stdin: Annotated[
        bool,
        typer.Option(
            "--password-stdin",
            help="Read the password from standard input (scripts); then a one-time code, if asked.",
        ),
    ] = False,
) -> None:
    """Sign a terminal in: check a hub URL and a token (or a name and password), then save them
    (mode 0600) for the other commands."""
    http = (ctx.obj or {}).get("http") if isinstance(ctx.obj, dict) else None
    try:
        saved = read_file()
        if invitation and not url:
            parts = urlsplit(invitation)
            url = f"{parts.scheme}://{parts.netloc}" if parts.scheme and parts.netloc else None
        url = (url or HubConfig.load().url or "").rstrip("/")
        if not url:
            url = typer.prompt("Hub URL", default="http://127.0.0.1:8080").rstrip("/")
        if invitation:
            token = _invitation_token(url, invitation, password_stdin, http)
        if user is None and token is None and not password_stdin:
            user = typer.prompt("Domain/user name (leave empty to paste an API token)", default="") or None
        if token is None and (user is not None or password_stdin):
            token = _password_token(url, user or "", password_stdin, http)
        token = token or typer.prompt("API token", hide_input=True)
    except ConfigError as exc:
        fail(CliFailure(str(exc), exit_code=2))
    except CliFailure as failure:
        fail(failure)
    checked = HubConfig(url=url, token=token, url_from="the command line", token_from="the command line")
    hub = None
    try:
        hub = Hub(checked, http=http)
        me = hub.me()
        where_to = write_file({**saved, "url": url, "token": token})
    except CliFailure as failure:
        fail(failure)
    except ConfigError as exc:
        fail(CliFailure(str(exc), exit_code=2))
    finally:
        if hub is not None:
            hub.close()
    typer.echo(f"signed in to {url} as {me['domain']}/{me['user']} ({me['role']}); saved to {where_to}")
    for key, env in ENV.items():
        if os.environ.get(env):
            typer.echo(f"note: {env} is set; it wins over the saved {key}")


def _invitation_token(url: str, link: str, from_stdin: bool, http: Any) -> str:
    """Choose the password of an invitation (asked twice, or read from stdin); a new token of yours."""
    if from_stdin:
        password = sys.stdin.readline().rstrip("\n")
    else:
        password = typer.prompt("Choose a password", hide_input=True, confirmation_prompt=True)
    body = {"invitation": link, "password": password, "note": f"profilerhub login on {platform.node()}"}
    return _anonymous_post(url, http, "invitation", body)


def _password_token(url: str, user: str, from_stdin: bool, http: Any) -> str:
    """A new token of the user's own, for their name and password (asked for, or read from stdin)."""
    domain, _, name = user.partition("/")
    if not domain or not name:
        raise CliFailure(f"--user {user!r}: write it DOMAIN/NAME, e.g. research/alice", exit_code=2)
    password = sys.stdin.readline().rstrip("\n") if from_stdin else typer.prompt("Password", hide_input=True)
    body = {
        "domain": domain,
        "user": name,
        "password": password,
        "note": f"profilerhub login on {platform.node()}",
    }
    try:
        return _anonymous_post(url, http, "password", body)
    except CliFailure as failure:
        if failure.status != 401 or "one-time code your authenticator" not in failure.message:
            raise
    # Two-factor sign-in is on for this account: the code (asked for, or the next line of stdin).
    code = sys.stdin.readline().strip() if from_stdin else typer.prompt("One-time code")
    return _anonymous_post(url, http, "password", {**body, "code": code})


def _anonymous_post(url: str, http: Any, way: str, body: dict[str, str]) -> str:
    """``POST /sign-in/{way}`` without a token; the new token it answers with."""
    hub = Hub(HubConfig(url, None, "the command line", "a password"), http=http, anonymous=True)
    try:
        return str(hub.request("POST", path("sign-in", way), json=body)["token"])
    except CliFailure as failure:
        if failure.status == 401:
            hint = "ask your administrator for a new invitation (`profilerhub users invite`)"
            if way == "password":
                hint = "no password yet? " + hint
            raise CliFailure(failure.message, hint, status=401) from None
        raise
    finally:
        hub.close()


@config_app.command("show")
def show_config(output: OutputOption = Output.table) -> None:
    """Where the URL and token come from (the token masked)."""
    try:
        config = HubConfig.load()
    except ConfigError as exc:
        fail(CliFailure(str(exc), exit_code=2))
    shown = {
        "url": config.url,
        "url_from": config.url_from,
        "token": mask(config.token),
        "token_from": config.token_from,
        "file": str(config_path()),
    }
    fields = [
        ("url", "url"),
        ("  from", "url_from"),
        ("token", "token"),
        ("  from", "token_from"),
        ("config file", "file"),
    ]
    emit(shown, output, lambda: details(shown, fields))


@config_app.command("set")
def set_config(key: Key, value: str = typer.Argument(..., metavar="VALUE")) -> None:
    """Save one value (url or token) without checking it with the hub."""
    try:
        saved = read_file()
        where_to = write_file({**saved, key.value: value.rstrip("/") if key is Key.url else value})
    except ConfigError as exc:
        fail(CliFailure(str(exc), exit_code=2))
    typer.echo(f"saved {key.value} to {where_to}")


@config_app.command("path")
def config_file() -> None:
    """Print the config file's path ($PROFILERHUB_CONFIG, else ~/.config/profilerhub/config.toml)."""
    typer.echo(str(config_path()))


def whoami(ctx: typer.Context, output: OutputOption = Output.table) -> None:
    """Who the configured token belongs to, on which hub."""

    def work(hub: Hub) -> None:
        me = {**hub.get(path("me")), "hub": hub.url}
        fields = [
            ("hub", "hub"),
            ("user", "user"),
            ("domain", "domain"),
            ("role", "role"),
            ("platform admin", "is_platform_admin"),
            ("scopes", "scopes"),
            ("impersonated by", "impersonated_by"),
        ]
        emit(me, output, lambda: details(me, fields))

    run(ctx, work)


def register(app: typer.Typer) -> None:
    app.command("login")(login)
    app.command("whoami")(whoami)
    app.add_typer(config_app)
