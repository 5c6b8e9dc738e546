"""``profilerhub apps …``: a user's profiler apps (start, stop, open, list, describe).

Starting is ``CreateApp`` and stopping is ``DeleteApp``, as in SageMaker: a stopped app stays
readable as ``Deleted``; starting it again makes a new one. ``create`` and ``delete`` are
accepted as other names for ``start`` and ``stop``.
"""

from __future__ import annotations

import time
from enum import StrEnum
from typing import Annotated, Any

import typer

from profilerhub.cli.hubapi import CliFailure, Hub, path, run
from profilerhub.cli.output import Column, Output, OutputOption, details, emit
from profilerhub.cli.resources import DomainOption, LimitOption, UserOption, app_group, show_list, where

apps_app = app_group("apps", "Profiler apps of a user: start, stop, open, list and describe them.")


class AppType(StrEnum):
    DetailedProfiler = "DetailedProfiler"
    TensorBoard = "TensorBoard"


class AppStatus(StrEnum):
    Pending = "Pending"
    InService = "InService"
    Deleting = "Deleting"
    Deleted = "Deleted"
    Failed = "Failed"


NameArgument = Annotated[str, typer.Argument(metavar="NAME", help="The app's name.")]
TypeOption = Annotated[AppType, typer.Option("--type", "-t", help="The kind of app.")]
StatusOption = Annotated[AppStatus | None, typer.Option(help="Only apps in this status.", show_default="any")]
WaitOption = Annotated[
    float | None,
    typer.Option(
        "--wait",
        metavar="SECONDS",
        min=1,
        show_default="don't wait",
        help="Wait up to this long for the app to settle (InService, Failed, Deleted).",
    ),
]

APP_COLUMNS = [
    Column("user", value=lambda a: f"{a['domain']}/{a['user']}", width=12, fold=True),
    Column("type", "app_type", width=16, priority=3),
    Column("name", "app_name", width=8, fold=True),
    Column("status", "status", width=9),
    Column("since", "status_changed_at", width=16, priority=1),
    Column("app id", "app_id", width=26, priority=4),
    Column("reason", "failure_reason", width=12, fold=True, priority=2),
]
APP_FIELDS = [
    ("app", "app_name"),
    ("type", "app_type"),
    ("user", "user"),
    ("domain", "domain"),
    ("app id", "app_id"),
    ("status", "status"),
    ("failure reason", "failure_reason"),
    ("url", "url"),
    ("created", "created_at"),
    ("status since", "status_changed_at"),
    ("last activity", "last_activity_at"),
]
SETTLED = {"InService", "Failed", "Deleted"}


def _app_path(hub: Hub, domain: str | None, user: str | None, app_type: AppType, name: str) -> str:
    d, u = where(hub, domain, user)
    return path("domains", d, "users", u, "apps", app_type.value, name)


def _show(hub: Hub, app: dict[str, Any], output: Output) -> None:
    shown = dict(app)
    if shown.get("url", "").startswith("/"):
        shown["url"] = hub.url + shown["url"]
    title = f"App {app['app_type']}/{app['app_name']} of {app['domain']}/{app['user']}"
    emit(shown, output, lambda: details(shown, APP_FIELDS, title=title))


def _settle(hub: Hub, url: str, app: dict[str, Any], wait: float | None) -> dict[str, Any]:
    """Poll the app until it settles or ``wait`` seconds pass (then say so, and exit 1)."""
    if wait is None:
        return app
    deadline = time.monotonic() + wait
    while app["status"] not in SETTLED:
        if time.monotonic() >= deadline:
            raise CliFailure(
                f"the app is still {app['status']} after {wait:g} s",
                "see `profilerhub apps describe`; the workers may be down (`profilerhub up` runs them)",
            )
        time.sleep(min(1.0, max(0.05, deadline - time.monotonic())))
        app = hub.get(url)
    return app


@apps_app.command("list")
def list_apps(
    ctx: typer.Context,
    domain: DomainOption = None,
    user: UserOption = None,
    every: bool = typer.Option(False, "--all", help="Every app you administer, of every user."),
    status: StatusOption = None,
    output: OutputOption = Output.table,
    limit: LimitOption = None,
) -> None:
    """A user's apps (yours by default), or --all the apps you administer."""

    def work(hub: Hub) -> None:
        if every:
            url, title = path("apps"), "Apps"
        else:
            d, u = where(hub, domain, user)
            url, title = path("domains", d, "users", u, "apps"), f"Apps of {d}/{u}"
        state = status.value if status else None
        show_list(hub, url, APP_COLUMNS, output, limit, title=title, empty="no apps", status=state)

    run(ctx, work)


@apps_app.command("describe")
def describe_app(
    ctx: typer.Context,
    name: NameArgument = "default",
    app_type: TypeOption = AppType.DetailedProfiler,
    domain: DomainOption = None,
    user: UserOption = None,
    output: OutputOption = Output.table,
) -> None:
    """One app: its status, why it failed, where to open it."""
    run(ctx, lambda hub: _show(hub, hub.get(_app_path(hub, domain, user, app_type, name)), output))


@apps_app.command("start")
def start_app(
    ctx: typer.Context,
    name: NameArgument = "default",
    app_type: TypeOption = AppType.DetailedProfiler,
    domain: DomainOption = None,
    user: UserOption = None,
    wait: WaitOption = None,
    output: OutputOption = Output.table,
) -> None:
    """Start a user's app (yours by default); it is Pending until a worker has it running."""

    def work(hub: Hub) -> None:
        d, u = where(hub, domain, user)
        body = {"app_type": app_type.value, "app_name": name}
        app = hub.request("POST", path("domains", d, "users", u, "apps"), json=body)
        app = _settle(hub, path("domains", d, "users", u, "apps", app_type.value, name), app, wait)
        _show(hub, app, output)

    run(ctx, work)


@apps_app.command("stop")
def stop_app(
    ctx: typer.Context,
    name: NameArgument = "default",
    app_type: TypeOption = AppType.DetailedProfiler,
    domain: DomainOption = None,
    user: UserOption = None,
    wait: WaitOption = None,
    output: OutputOption = Output.table,
) -> None:
    """Stop a user's app and delete its instance (its record stays, as Deleted)."""

    def work(hub: Hub) -> None:
        url = _app_path(hub, domain, user, app_type, name)
        _show(hub, _settle(hub, url, hub.request("DELETE", url), wait), output)

    run(ctx, work)


@apps_app.command("open")
def open_app(
    ctx: typer.Context,
    name: NameArgument = "default",
    app_type: TypeOption = AppType.DetailedProfiler,
    domain: DomainOption = None,
    user: UserOption = None,
    browser: bool = typer.Option(False, "--browser", help="Open the link in a web browser as well."),
    output: OutputOption = Output.table,
) -> None:
    """A one-time link that opens your app in a browser (valid 5 minutes; the owner's alone)."""

    def work(hub: Hub) -> None:
        link = hub.request("POST", _app_path(hub, domain, user, app_type, name) + "/presigned-url")
        url = hub.url + link["url"] if str(link["url"]).startswith("/") else str(link["url"])
        link = {**link, "url": url}
        emit(link, output, lambda: typer.echo(url))
        if browser:
            import webbrowser

            webbrowser.open(url)

    run(ctx, work)


def register(app: typer.Typer) -> None:
    app.add_typer(apps_app)
    apps_app.command("create", hidden=True)(start_app)
    apps_app.command("delete", hidden=True)(stop_app)
