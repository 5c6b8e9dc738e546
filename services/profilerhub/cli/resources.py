"""``profilerhub domains …`` and ``profilerhub users …``: the hub's domains and user profiles.

Every command here is a thin call of the HTTP API (``docs/api.md``) through
:mod:`profilerhub.cli.hubapi`, printed by :mod:`profilerhub.cli.output`. Options shared by the
resource commands (``--domain``, ``--user``, ``--limit``, ``--yes``) are declared once here.
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import StrEnum
from typing import Annotated, Any

import typer

from profilerhub.cli.hubapi import CliFailure, Hub, confirm, path, run
from profilerhub.cli.output import Column, Output, OutputOption, details, emit, table

DomainOption = Annotated[
    str | None,
    typer.Option("--domain", "-d", metavar="DOMAIN", show_default="your own", help="The domain."),
]
UserOption = Annotated[
    str | None,
    typer.Option(
        "--user", "-u", metavar="USER", show_default="yourself", help="The user profile, in the domain."
    ),
]
LimitOption = Annotated[
    int | None,
    typer.Option(
        "--limit",
        "-n",
        metavar="N",
        min=1,
        show_default="all",
        help="Show at most N items (pages are fetched as needed).",
    ),
]
YesOption = Annotated[bool, typer.Option("--yes", "-y", help="Do not ask before deleting.")]


def where(hub: Hub, domain: str | None, user: str | None = None) -> tuple[str, str]:
    """``(domain, user)``, what was left out being the token's own (``GET /me``).

    A user left out in another domain than one's own is an error: there is no "own" user there."""
    if domain is not None and user is not None:
        return domain, user
    me = hub.me()
    own_domain, own_user = str(me["domain"]), str(me["user"])
    domain = domain or own_domain
    if user is None:
        if domain != own_domain:
            raise CliFailure(f"which user of {domain}?", "pass --user USER", exit_code=2)
        user = own_user
    return domain, user


def domain_of(hub: Hub, domain: str | None) -> str:
    """``domain``, or the token's own."""
    return domain if domain is not None else str(hub.me()["domain"])


def more_caption(shown: int, limit: int | None) -> str:
    return f"first {shown}: pass a larger --limit for more" if limit is not None and shown >= limit else ""


def show_list(
    hub: Hub,
    url: str,
    columns: Sequence[Column],
    output: Output,
    limit: int | None,
    *,
    title: str,
    empty: str,
    **params: Any,
) -> None:
    """Every item of a list route (following ``next_token``, at most ``limit``), as JSON or a table."""
    items = list(hub.pages(url, limit=limit, **params))
    caption = more_caption(len(items), limit)
    emit(items, output, lambda: table(items, columns, title=title, empty=empty, caption=caption))


def app_group(name: str, help_text: str) -> typer.Typer:
    return typer.Typer(
        name=name, help=help_text, no_args_is_help=True, add_completion=False, pretty_exceptions_enable=False
    )


# --------------------------------------------------------------------------- domains

domains_app = app_group("domains", "Domains: create, list, describe, change and delete them.")

DOMAIN_COLUMNS = [
    Column("name", "name", width=12, fold=True),
    Column("status", "status", width=9),
    Column("idle min", value=lambda d: d["settings"].get("idle_minutes"), width=8, priority=2),
    Column("own apps", value=lambda d: d["settings"].get("users_manage_own_apps"), width=8, priority=3),
    Column("created", "created_at", width=16, priority=1),
    Column("domain id", "domain_id", width=26, priority=4),
]
DOMAIN_FIELDS = [
    ("name", "name"),
    ("domain id", "domain_id"),
    ("status", "status"),
    ("idle minutes", "settings.idle_minutes"),
    ("users manage own apps", "settings.users_manage_own_apps"),
    ("allow impersonation", "settings.allow_impersonation"),
    ("max live apps", "settings.max_live_apps"),
    ("job idle hours", "settings.job_idle_hours"),
    ("created", "created_at"),
    ("updated", "updated_at"),
]


def _settings(
    idle_minutes: int | None,
    users_manage_own_apps: bool | None,
    allow_impersonation: bool | None,
    max_live_apps: int | None,
    job_idle_hours: int | None,
) -> dict[str, Any]:
    given = {
        "idle_minutes": idle_minutes,
        "users_manage_own_apps": users_manage_own_apps,
        "allow_impersonation": allow_impersonation,
        "max_live_apps": max_live_apps,
        "job_idle_hours": job_idle_hours,
    }
    return {k: v for k, v in given.items() if v is not None}


IdleOption = Annotated[
    int | None,
    typer.Option(metavar="MINUTES", min=0, show_default="120", help="Delete apps idle this long (0: never)."),
]
OwnAppsOption = Annotated[
    bool | None, typer.Option(show_default="yes", help="Whether users may start and stop their own apps.")
]
ImpersonationOption = Annotated[
    bool | None,
    typer.Option(show_default="no", help="Whether tokens admins make for users may open the users' apps."),
]
MaxAppsOption = Annotated[
    int | None, typer.Option(metavar="N", min=0, show_default="50", help="Most live apps in the domain.")
]
JobIdleOption = Annotated[
    int | None,
    typer.Option(
        metavar="HOURS",
        min=0,
        show_default="24",
        help="Close an unfinished job with no upload for this long (0: never).",
    ),
]


def _show_domain(domain: dict[str, Any], output: Any) -> None:
    emit(domain, output, lambda: details(domain, DOMAIN_FIELDS, title=f"Domain {domain['name']}"))


@domains_app.command("list")
def list_domains(ctx: typer.Context, output: OutputOption = Output.table, limit: LimitOption = None) -> None:
    """The domains you may see (all of them for a platform administrator)."""

    def work(hub: Hub) -> None:
        show_list(hub, path("domains"), DOMAIN_COLUMNS, output, limit, title="Domains", empty="no domains")

    run(ctx, work)


@domains_app.command("describe")
def describe_domain(
    ctx: typer.Context, name: str = typer.Argument(..., metavar="DOMAIN"), output: OutputOption = Output.table
) -> None:
    """One domain and its settings."""
    run(ctx, lambda hub: _show_domain(hub.get(path("domains", name)), output))


@domains_app.command("create")
def create_domain(
    ctx: typer.Context,
    name: str = typer.Argument(..., metavar="DOMAIN", help="Letters, digits and inner hyphens, ≤ 63."),
    idle_minutes: IdleOption = None,
    users_manage_own_apps: OwnAppsOption = None,
    allow_impersonation: ImpersonationOption = None,
    max_live_apps: MaxAppsOption = None,
    job_idle_hours: JobIdleOption = None,
    output: OutputOption = Output.table,
) -> None:
    """Create a domain (platform administrators)."""
    settings = _settings(
        idle_minutes, users_manage_own_apps, allow_impersonation, max_live_apps, job_idle_hours
    )
    body: dict[str, Any] = {"name": name, **({"settings": settings} if settings else {})}
    run(ctx, lambda hub: _show_domain(hub.request("POST", path("domains"), json=body), output))


@domains_app.command("update")
def update_domain(
    ctx: typer.Context,
    name: str = typer.Argument(..., metavar="DOMAIN"),
    idle_minutes: IdleOption = None,
    users_manage_own_apps: OwnAppsOption = None,
    allow_impersonation: ImpersonationOption = None,
    max_live_apps: MaxAppsOption = None,
    job_idle_hours: JobIdleOption = None,
    output: OutputOption = Output.table,
) -> None:
    """Change a domain's settings; only the options given change."""
    settings = _settings(
        idle_minutes, users_manage_own_apps, allow_impersonation, max_live_apps, job_idle_hours
    )
    if not settings:
        raise typer.BadParameter("give at least one setting to change (see --help)")
    body = {"settings": settings}
    run(ctx, lambda hub: _show_domain(hub.request("PATCH", path("domains", name), json=body), output))


@domains_app.command("delete")
def delete_domain(
    ctx: typer.Context, name: str = typer.Argument(..., metavar="DOMAIN"), yes: YesOption = False
) -> None:
    """Delete a domain (it must have no user profiles left)."""

    def work(hub: Hub) -> None:
        confirm(f"domain {name}", yes)
        hub.request("DELETE", path("domains", name))
        typer.echo(f"deleted domain {name}")

    run(ctx, work)


# --------------------------------------------------------------------------- users


class Role(StrEnum):
    user = "user"
    admin = "admin"


users_app = app_group("users", "User profiles of a domain: create, list, describe and delete them.")

USER_COLUMNS = [
    Column("name", "name", width=12, fold=True),
    Column("role", "role", width=5),
    Column("created", "created_at", width=16, priority=1),
    Column("user id", "user_id", width=26, priority=2),
]
USER_FIELDS = [
    ("name", "name"),
    ("domain", "domain"),
    ("user id", "user_id"),
    ("role", "role"),
    ("platform admin", "is_platform_admin"),
    ("created", "created_at"),
]


def _show_user(user: dict[str, Any], output: Any) -> None:
    title = f"User {user['domain']}/{user['name']}"
    emit(user, output, lambda: details(user, USER_FIELDS, title=title))


@users_app.command("list")
def list_users(
    ctx: typer.Context,
    domain: DomainOption = None,
    output: OutputOption = Output.table,
    limit: LimitOption = None,
) -> None:
    """The user profiles of a domain (administrators)."""

    def work(hub: Hub) -> None:
        name = domain_of(hub, domain)
        url = path("domains", name, "users")
        show_list(hub, url, USER_COLUMNS, output, limit, title=f"Users of {name}", empty="no users")

    run(ctx, work)


@users_app.command("describe")
def describe_user(
    ctx: typer.Context,
    name: str = typer.Argument(..., metavar="USER"),
    domain: DomainOption = None,
    output: OutputOption = Output.table,
) -> None:
    """One user profile."""
    run(ctx, lambda hub: _show_user(hub.get(path("domains", domain_of(hub, domain), "users", name)), output))


@users_app.command("create")
def create_user(
    ctx: typer.Context,
    name: str = typer.Argument(..., metavar="USER", help="Letters, digits and inner hyphens, ≤ 63."),
    domain: DomainOption = None,
    role: Role = typer.Option(Role.user, help="user, or admin (a domain administrator)."),
    output: OutputOption = Output.table,
) -> None:
    """Create a user profile (administrators). Then invite them: `profilerhub users invite`."""

    def work(hub: Hub) -> None:
        body = {"name": name, "role": role.value}
        _show_user(hub.request("POST", path("domains", domain_of(hub, domain), "users"), json=body), output)

    run(ctx, work)


@users_app.command("invite")
def invite_user(
    ctx: typer.Context,
    name: str = typer.Argument(..., metavar="USER"),
    domain: DomainOption = None,
    days: float = typer.Option(7, "--days", min=0.01, max=90, help="How long the link may be used (once)."),
    output: OutputOption = Output.table,
) -> None:
    """A one-time link for the user to choose a password (administrators). Inviting a user who
    has a password resets it: the old one stops working, the tokens and access keys made from it
    are revoked, and their browser sessions end."""

    def work(hub: Hub) -> None:
        body = {"expires_in_seconds": max(300, int(days * 86400))}
        made = hub.request(
            "POST", path("domains", domain_of(hub, domain), "users", name, "invitations"), json=body
        )
        fields = [
            ("link", "url"),
            ("expires", "expires_at"),
            ("reset", "reset"),
            ("tokens revoked", "tokens_revoked"),
            ("invitation id", "invitation_id"),
        ]
        emit(made, output, lambda: details(made, fields, title=f"Invitation for {name}: give them the link"))

    run(ctx, work)


@users_app.command("delete")
def delete_user(
    ctx: typer.Context,
    name: str = typer.Argument(..., metavar="USER"),
    domain: DomainOption = None,
    yes: YesOption = False,
) -> None:
    """Delete a user profile, its tokens and jobs (stop its apps first)."""

    def work(hub: Hub) -> None:
        in_domain = domain_of(hub, domain)
        confirm(f"user {in_domain}/{name} with its tokens and jobs", yes)
        hub.request("DELETE", path("domains", in_domain, "users", name))
        typer.echo(f"deleted user {in_domain}/{name}")

    run(ctx, work)


def register(app: typer.Typer) -> None:
    app.add_typer(domains_app)
    app.add_typer(users_app)
