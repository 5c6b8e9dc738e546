"""The TensorBoard app type: real TensorBoard over its owner's runs, behind the hub's token.

``create_app(settings)`` builds TensorBoard's own WSGI application in this process
(``tensorboard.program.TensorBoard`` configured like ``tensorboard --logdir``, its server
replaced by one that only hands the application back) with ``path_prefix`` = ``/apps/{app_id}``,
runs it under an ASGI adapter (``a2wsgi``), and puts it behind ``auth.RequireAppToken``, the
gate of the profiler app: a request without a current hub-signed token for this app and owner
gets 401 and never reaches TensorBoard.

What it reads: the owner's jobs folder ``{storage_url}/{domain_id}/{user_id}/jobs/``. TensorBoard
walks it for event files (``*tfevents*``), so a job's ``raw/tensorboard/events.out.tfevents...``
is the run ``{job_id}/raw/tensorboard``; new jobs appear at the next reload
(``reload_interval``).  A local store is read in place; an ``s3://`` store through TensorBoard's
own S3 reader (boto3, ``S3_ENDPOINT`` = the hub's ``s3_endpoint_url``), which lists and reads
the objects directly.  Nothing outside the owner's folder is ever named to TensorBoard.
"""

from __future__ import annotations

import os
from typing import Any
from urllib.parse import unquote, urlsplit

from a2wsgi import WSGIMiddleware
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from profilerhub_app.auth import RequireAppToken
from profilerhub_app.http import error
from profilerhub_app.settings import AppServiceSettings
from profilerhub_core.storage import layout

RELOAD_SECONDS = 30
"""How often TensorBoard looks for new event files (its ``--reload_interval``)."""


def owner_logdir(settings: AppServiceSettings) -> str:
    """The owner's jobs folder as TensorBoard names it: a local path, or an ``s3://`` URL."""
    if not settings.storage_url or not settings.domain_id:
        raise ValueError("a TensorBoard app needs PROFILERHUB_APP_STORAGE_URL and PROFILERHUB_APP_DOMAIN_ID")
    jobs = layout.jobs_prefix(settings.domain_id, settings.owner_id)
    parts = urlsplit(settings.storage_url)
    if parts.scheme == "file":
        return os.path.join(unquote(parts.path), jobs)
    return settings.storage_url.rstrip("/") + "/" + jobs


class _HandBack:
    """A ``server_class`` for ``TensorBoard``: keeps the WSGI app instead of serving it."""

    def __init__(self, wsgi_app: Any, flags: Any) -> None:
        self.wsgi_app = wsgi_app


def tensorboard_wsgi(settings: AppServiceSettings) -> Any:
    """TensorBoard's WSGI application over the owner's runs, under ``/apps/{app_id}``."""
    from tensorboard import program

    if settings.s3_endpoint_url:
        os.environ.setdefault("S3_ENDPOINT", settings.s3_endpoint_url)
    board = program.TensorBoard(server_class=_HandBack)
    board.configure(
        logdir=owner_logdir(settings),
        path_prefix=settings.base_path.rstrip("/"),
        reload_interval=RELOAD_SECONDS,
        load_fast="false",  # the Python loader: reads s3:// too, no data-server subprocess
        window_title=f"TensorBoard: {settings.owner}",
    )
    return board._make_server().wsgi_app


def create_app(settings: AppServiceSettings) -> ASGIApp:
    """The TensorBoard app for one owner, as an ASGI app (health at ``/apps/{id}/health``)."""
    board = WSGIMiddleware(tensorboard_wsgi(settings))
    base = settings.base_path
    health = f"{base}health"
    prefix = base.rstrip("/")

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        path = scope["path"]
        if path == health:
            await JSONResponse({"status": "ok", "type": "TensorBoard"})(scope, receive, send)
        elif path == prefix or path.startswith(base):
            await board(scope, receive, send)  # type: ignore[arg-type]
        else:
            await error(404, "ResourceNotFound", f"no page at {path}")(scope, receive, send)

    return RequireAppToken(app, settings)


__all__ = ["RELOAD_SECONDS", "create_app", "owner_logdir", "tensorboard_wsgi"]
