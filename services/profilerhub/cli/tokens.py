"""``profilerhub tokens …``: a user's API tokens (create shows the secret once; revoke ends it)."""

from __future__ import annotations

import re
from typing import Annotated, Any
from urllib.parse import quote

import typer

from profilerhub.cli.hubapi import CliFailure, Hub, confirm, path, run
from profilerhub.cli.output import Column, Output, OutputOption, console, details, emit
from profilerhub.cli.resources import (
    DomainOption,
    LimitOption,
    UserOption,
    YesOption,
    app_group,
    show_list,
    where,
)

tokens_app = app_group("tokens", "API tokens of a user: create, list, describe and revoke them.")

TOKEN_COLUMNS = [
    Column("token id", "token_id", width=12, fold=True),
    Column("prefix", "prefix", width=12, priority=3),
    Column("note", "note", width=10, fold=True, priority=2),
    Column("status", "status", width=7),
    Column("expires", "expires_at", width=16, priority=1),
    Column("last used", "last_used_at", width=16, priority=4),
    Column("scopes", "scopes", width=10, fold=True, priority=5),
    Column("created by", "created_by", width=12, priority=6),
]
TOKEN_FIELDS = [
    ("token id", "token_id"),
    ("prefix", "prefix"),
    ("note", "note"),
    ("status", "status"),
    ("scopes", "scopes"),
    ("created", "created_at"),
    ("expires", "expires_at"),
    ("revoked", "revoked_at"),
    ("last used", "last_used_at"),
    ("created by", "created_by"),
]

UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400, "y": 366 * 86400}


def parse_duration(text: str) -> int:
    """``"90d"``, ``"12h"``, ``"3600"`` -> seconds."""
    match = re.fullmatch(r"\s*(\d+)\s*([smhdwy]?)\s*", text.lower())
    if not match:
        raise typer.BadParameter(f"not a duration: {text!r} (try 3600, 12h, 30d or 1y)")
    return int(match.group(1)) * UNITS[match.group(2) or "s"]


def _tokens_path(hub: Hub, domain: str | None, user: str | None) -> tuple[str, str]:
    d, u = where(hub, domain, user)
    return path("domains", d, "users", u, "tokens"), f"{d}/{u}"


@tokens_app.command("list")
def list_tokens(
    ctx: typer.Context,
    domain: DomainOption = None,
    user: UserOption = None,
    output: OutputOption = Output.table,
    limit: LimitOption = None,
) -> None:
    """A user's tokens, without their secrets (yours by default)."""

    def work(hub: Hub) -> None:
        url, who = _tokens_path(hub, domain, user)
        show_list(hub, url, TOKEN_COLUMNS, output, limit, title=f"Tokens of {who}", empty="no tokens")

    run(ctx, work)


@tokens_app.command("describe")
def describe_token(
    ctx: typer.Context,
    token_id: str = typer.Argument(..., metavar="TOKEN_ID"),
    domain: DomainOption = None,
    user: UserOption = None,
    output: OutputOption = Output.table,
) -> None:
    """One token of a user (by its id, as `tokens list` shows it)."""

    def work(hub: Hub) -> None:
        url, who = _tokens_path(hub, domain, user)
        found = next((t for t in hub.pages(url) if t["token_id"] == token_id), None)
        if found is None:
            raise CliFailure(f"{who} has no token {token_id}", "see `profilerhub tokens list`")
        emit(found, output, lambda: details(found, TOKEN_FIELDS, title=f"Token {token_id} of {who}"))

    run(ctx, work)


@tokens_app.command("create")
def create_token(
    ctx: typer.Context,
    domain: DomainOption = None,
    user: UserOption = None,
    note: str = typer.Option("", metavar="TEXT", help="What the token is for."),
    expires_in: Annotated[
        str | None,
        typer.Option(
            "--expires-in",
            metavar="DURATION",
            show_default="never",
            help="Lifetime: seconds, or 12h, 30d, 1y (at least 60 s).",
        ),
    ] = None,
    scope: Annotated[
        list[str] | None,
        typer.Option(
            "--scope",
            metavar="ACTION",
            show_default="your token's own",
            help="An action it may perform (repeat for more; * for all).",
        ),
    ] = None,
    output: OutputOption = Output.table,
) -> None:
    """Create a token for a user (yours by default); its secret is shown this once."""
    body: dict[str, Any] = {"note": note}
    if expires_in is not None:
        body["expires_in_seconds"] = parse_duration(expires_in)
    if scope:
        body["scopes"] = scope

    def work(hub: Hub) -> None:
        url, who = _tokens_path(hub, domain, user)
        made = hub.request("POST", url, json=body)
        emit(made, output, lambda: _show_created(hub, made, who))

    run(ctx, work)


def _show_created(hub: Hub, made: dict[str, Any], who: str) -> None:
    out = console()
    details(
        made,
        [("token id", "token_id"), ("for", "note"), ("scopes", "scopes"), ("expires", "expires_at")],
        title=f"New token for {who}",
        out=out,
    )
    out.print("\nThe secret is shown only now; a training script uses it as:\n", highlight=False)
    out.print(f"  export PROFILERHUB_URL={hub.url}", highlight=False, soft_wrap=True)
    out.print(f"  export PROFILERHUB_TOKEN={made['token']}", highlight=False, soft_wrap=True)


@tokens_app.command("revoke")
def revoke_token(
    ctx: typer.Context,
    token_id: str | None = typer.Argument(None, metavar="TOKEN_ID", show_default=False),
    domain: DomainOption = None,
    user: UserOption = None,
    all_tokens: bool = typer.Option(
        False,
        "--all",
        help="Revoke every token of the user and end every browser session: sign out everywhere.",
    ),
    yes: YesOption = False,
) -> None:
    """Revoke one token (at once, with the browser sessions signed in with it), or --all."""
    if (token_id is None) == (not all_tokens):
        raise typer.BadParameter("give a TOKEN_ID, or --all (not both)")

    def work(hub: Hub) -> None:
        url, who = _tokens_path(hub, domain, user)
        if all_tokens:
            confirm(f"every token and browser session of {who}", yes)
            hub.request("DELETE", url)
            typer.echo(f"revoked every token of {who} and ended their browser sessions")
            return
        assert token_id is not None
        hub.request("DELETE", f"{url}/{quote(token_id, safe='')}")
        typer.echo(f"revoked token {token_id} of {who}")

    run(ctx, work)


def register(app: typer.Typer) -> None:
    app.add_typer(tokens_app)
    # `delete` is what the other resources call it.
    tokens_app.command("delete", hidden=True)(revoke_token)
