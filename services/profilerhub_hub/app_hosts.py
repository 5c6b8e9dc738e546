"""Apps on origins of their own (``app_subdomain_host``): which host serves what.

With ``PROFILERHUB_APP_SUBDOMAIN_HOST=https://apps.example.com`` the app ``<id>`` is served at
``https://<id>.apps.example.com/apps/<id>/``: an origin of its own, so a page served by one app
cannot read another app's answers, the console or the API with the browser's credentials (the
same-origin policy sees different hosts, and every hub cookie is host-only: no ``Domain``). The
path keeps its ``/apps/<id>/`` prefix, so an app need not know which way it is served.

``AppHosts`` routes by the request's ``Host``:

    <id>.<apps host>   /apps/<id>/…      the proxy, exactly as on the hub's own host
                       anything else     404: an app's host serves that app and nothing of the hub
    any other host     /apps/<id>/…      GET/HEAD: 308 to the app's own origin (links keep working);
                                         with a bearer token (scripts): served, as before;
                                         anything else: 404 naming where the app is served

Unset (the default), apps are served under the hub's origin and nothing here runs.
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit

from starlette.types import ASGIApp, Receive, Scope, Send

from profilerhub_core.settings import Settings
from profilerhub_hub.errors import error_response

APPS_PREFIX = "/apps/"
_DEFAULT_PORTS = {"http": "80", "https": "443"}
# An app id (a UUID) is one DNS label; anything else in that place is no app (and never a redirect).
_APP_LABEL = re.compile(r"[a-z0-9][a-z0-9-]{0,62}")


def app_origin(settings: Settings, app_id: str) -> str:
    """The origin the app ``app_id`` is served at: its own, or the hub's."""
    if not settings.app_subdomain_host:
        parts = urlsplit(settings.public_url)
        return f"{parts.scheme}://{parts.netloc}"
    scheme, _, host = settings.app_subdomain_host.partition("://")
    return f"{scheme}://{app_id}.{host}"


def app_base_url(settings: Settings, app_id: str) -> str:
    """The app's root page, absolute: ``<its origin>/apps/<id>/``."""
    return f"{app_origin(settings, app_id)}{APPS_PREFIX}{app_id}/"


def _without_default_port(host: str, scheme: str) -> str:
    name, _, port = host.rpartition(":")
    return name if name and port == _DEFAULT_PORTS.get(scheme) else host


class AppHosts:
    """ASGI middleware that keeps each app on its own host and the hub on the others (see above)."""

    def __init__(self, app: ASGIApp, settings: Settings) -> None:
        self.app = app
        self.settings = settings
        scheme, _, host = settings.app_subdomain_host.partition("://")
        self.scheme = scheme
        self.suffix = "." + _without_default_port(host, scheme)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = dict(scope["headers"])
        host = _without_default_port(headers.get(b"host", b"").decode("latin-1").lower(), self.scheme)
        path: str = scope["path"]
        if host.endswith(self.suffix):
            app_id = host[: -len(self.suffix)]
            prefix = f"{APPS_PREFIX}{app_id}"
            if _APP_LABEL.fullmatch(app_id) and (path == prefix or path.startswith(prefix + "/")):
                await self.app(scope, receive, send)
                return
            message = f"This host serves the app {app_id} only; the hub is at {self.settings.public_url}"
            await error_response(404, "NotFound", message)(scope, receive, send)
            return
        if not path.startswith(APPS_PREFIX):
            await self.app(scope, receive, send)
            return
        if headers.get(b"authorization", b"")[:7].lower() == b"bearer ":
            await self.app(scope, receive, send)  # a script's request: no browser state to protect
            return
        app_id = path[len(APPS_PREFIX) :].partition("/")[0]
        if not _APP_LABEL.fullmatch(app_id):
            await error_response(404, "NotFound", f"App '{app_id}' not found")(scope, receive, send)
            return
        where = app_base_url(self.settings, app_id)
        if scope["method"] in ("GET", "HEAD"):
            raw_path = (scope.get("raw_path") or path.encode()).decode("latin-1")
            query = scope.get("query_string", b"").decode("latin-1")
            location = app_origin(self.settings, app_id) + raw_path + (f"?{query}" if query else "")
            await error_response(308, "Moved", f"The app is served at {where}", {"Location": location})(
                scope, receive, send
            )
            return
        await error_response(404, "NotFound", f"Apps are served at their own origin: this one at {where}")(
            scope, receive, send
        )


__all__ = ["AppHosts", "app_base_url", "app_origin"]
