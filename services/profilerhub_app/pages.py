"""The app's pages: server-rendered HTML shells that load one native ES module each.

Every page is the same shell (top bar, a ``<main>`` with the page's skeleton) plus
``static/js/<page>.js``; the module fetches the engine's numbers from ``api/…`` and draws them.
Nothing is inline: no ``<script>`` bodies, no ``style=`` attributes, so the strict
Content-Security-Policy below holds (``script-src 'self'``, ``style-src 'self'``). What a module
needs to know (the base path, the job id) travels in ``data-`` attributes of ``<body>``.

Pages:
    ``/``                       jobs        the owner's jobs; tick two to compare
    ``/jobs/{job_id}``          dashboard   one job's panels
    ``/jobs/{job_id}/timeline`` timeline    the CPU/GPU timeline on a canvas
    ``/jobs/{job_id}/views``    views       the TensorBoard plugin's views: overview, operators,
                                            kernels, memory (``?tab=``, ``?trace=``)
    ``/compare?base=…&test=…``  compare     two jobs side by side, with both timelines
    ``/jobs/{job_id}/model``    model       the job's ph.watch tensors: losses, heat maps, findings

``?embed=1`` on the timeline page drops the top bar and crumbs (``<body data-embed>``): the compare
page shows two timelines so, one above the other, each the timeline page itself in a frame.
"""

from __future__ import annotations

import html
from collections.abc import Awaitable, Callable
from pathlib import Path

from starlette.requests import Request
from starlette.responses import HTMLResponse, Response
from starlette.routing import BaseRoute, Mount, Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from profilerhub_app.assets import Assets, Static
from profilerhub_app.settings import AppServiceSettings
from profilerhub_core.web import SHARED_WEB

STATIC = Path(__file__).parent / "static"

CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data: blob:; "
    "connect-src 'self'; font-src 'self'; base-uri 'none'; form-action 'self'; "
    "frame-src 'self'; frame-ancestors 'self'"
)
# Framing: only by the app's own pages (compare embeds two timelines); the hub keeps an answer's
# own X-Frame-Options instead of adding DENY.
SECURITY_HEADERS = [
    (b"content-security-policy", CSP.encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"same-origin"),
    (b"x-frame-options", b"SAMEORIGIN"),
]


class SecurityHeaders:
    """ASGI middleware: the CSP and friends on every HTTP answer (pages, modules, JSON)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", []), *SECURITY_HEADERS]
            await send(message)

        await self.app(scope, receive, send_with_headers)


# The skeleton of each page's <main> (templates/<page>.html): headings and empty containers the
# module fills; ``{base}``, ``{owner}``, ``{job}`` and ``{assets}`` (where the static files are:
# ``assets.Assets.url``) are replaced by escaped values.
TEMPLATES = Path(__file__).parent / "templates"
_BODIES = {
    name: (TEMPLATES / f"{name}.html").read_text()
    for name in ("jobs", "dashboard", "timeline", "compare", "views", "model")
}

_TITLES = {
    "jobs": "Jobs",
    "dashboard": "Dashboard",
    "timeline": "Timeline",
    "compare": "Compare",
    "views": "Profile",
    "model": "Model",
}


def render(settings: AppServiceSettings, assets: str, page: str, job: str = "", embed: bool = False) -> str:
    """The HTML of one page (every interpolated value escaped), linking its files under ``assets``
    (``Assets.url``); ``embed``: framed, no top bar."""
    base = settings.base_path
    values = {
        "base": html.escape(base),
        "owner": html.escape(settings.owner),
        "job": html.escape(job),
        "assets": html.escape(assets),
    }
    body = _BODIES[page].format(**values)
    static = values["assets"]
    nav = "".join(
        f'<a href="{values["base"]}{href}"{" aria-current=page" if name == page else ""}>{label}</a>'
        for name, href, label in (("jobs", "", "Jobs"), ("compare", "compare", "Compare"))
    )
    return (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{_TITLES[page]} · {values['owner']}'s profiler</title>"
        f'<link rel="icon" href="{static}/favicon.svg" type="image/svg+xml">'
        f'<link rel="stylesheet" href="{static}/vendor/uplot/uPlot.min.css">'
        f'<link rel="stylesheet" href="{static}/base/base.css">'
        f'<link rel="stylesheet" href="{static}/css/app.css">'
        f'<script type="module" src="{static}/js/{page}.js"></script></head>'
        f'<body data-base="{values["base"]}" data-job="{values["job"]}" data-page="{page}"'
        f"{' data-embed' if embed else ''}>"
        '<a class="skip" href="#main">Skip to content</a>'
        f'<header class="topbar"><a class="brand" href="{values["base"]}">ProfilerHub</a>'
        f'<nav aria-label="app">{nav}</nav><span class="grow"></span>'
        f'<span class="owner" id="owner">{values["owner"]}\'s profiler</span>'
        '<button type="button" id="theme" class="ghost" aria-label="switch light/dark theme">◐</button>'
        f'</header><main id="main" class="page-{page}" tabindex="-1">{body}</main></body></html>'
    )


def routes(settings: AppServiceSettings, touch: Callable[[], None]) -> list[BaseRoute]:
    """The page routes and the static mounts under the app's base path; ``touch()`` notes activity.

    The pages link their files under ``assets/{version}/`` (cached for good: ``assets``); the same
    files stay under ``static/``, revalidated on each load."""
    base = settings.base_path
    assets = Assets(STATIC, SHARED_WEB)
    linked = assets.url(base)

    def page(name: str, job_param: bool = False) -> Callable[[Request], Awaitable[Response]]:
        async def endpoint(request: Request) -> Response:
            touch()
            job = request.path_params.get("job_id", "") if job_param else ""
            embed = name == "timeline" and request.query_params.get("embed") == "1"
            return HTMLResponse(render(settings, linked, name, job, embed))

        return endpoint

    return [
        Route(base, page("jobs")),
        Route(f"{base}jobs/{{job_id}}", page("dashboard", True)),
        Route(f"{base}jobs/{{job_id}}/timeline", page("timeline", True)),
        Route(f"{base}jobs/{{job_id}}/views", page("views", True)),
        Route(f"{base}jobs/{{job_id}}/model", page("model", True)),
        Route(f"{base}compare", page("compare")),
        Mount(f"{base}assets/{{version}}/base", app=assets.folder(shared=True), name="assets-base"),
        Mount(f"{base}assets/{{version}}", app=assets.folder(), name="assets"),
        Mount(f"{base}static/base", app=Static(directory=SHARED_WEB), name="static-base"),
        Mount(f"{base}static", app=Static(directory=STATIC), name="static"),
    ]
