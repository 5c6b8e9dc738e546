"""The API's paths, written once: the prefix, the resource paths routes share, and the
``{domain}`` and ``{user}`` path parameters declared for the OpenAPI document.

Routes and ``create_app`` import from here (never from each other), so the job path the body
limit exempts is the very one the job routes serve. Each route module's router is an
``api_router``: its routes are built once, as the module declares them, with their full path
under ``API_PREFIX``, and ``create_app`` adds them to the app as they are (``mount``).

``deps.allow`` reads them from ``request.path_params`` so routes never repeat them, and FastAPI
therefore never sees them; without these declarations the document names paths whose parameters
it does not describe (client generators and schemathesis refuse such operations). Routes pass
``openapi_extra=IN_DOMAIN`` or ``OF_USER``: it costs nothing per request.
"""

from __future__ import annotations

import re
from enum import Enum
from typing import Any

from fastapi import APIRouter

from profilerhub_core.names import NAME_PATTERN

API_PREFIX = "/api/v1"

USER_APPS = "/domains/{domain}/users/{user}/apps"
ONE_APP = USER_APPS + "/{app_type}/{app_name}"
USER_JOBS = "/domains/{domain}/users/{user}/jobs"
ONE_JOB = USER_JOBS + "/{job_id}"
JOB_FILES = ONE_JOB + "/files/"
DOMAIN_WEBHOOKS = "/domains/{domain}/webhooks"
USER_WEBHOOKS = "/domains/{domain}/users/{user}/webhooks"


def api_router(prefix: str = "", *, tags: list[str | Enum]) -> APIRouter:
    """A route module's router, its paths under ``API_PREFIX`` + ``prefix``."""
    return APIRouter(prefix=API_PREFIX + prefix, tags=tags)


def path_regex(template: str) -> str:
    """``^`` + the template with each ``{parameter}`` matching one path segment (a prefix match)."""
    return "^" + re.sub(r"\{[^}]+\}", "[^/]+", template)


def _path_parameter(name: str, description: str) -> dict[str, Any]:
    schema = {"type": "string", "title": name.capitalize(), "pattern": NAME_PATTERN}
    return {"name": name, "in": "path", "required": True, "description": description, "schema": schema}


_DOMAIN = _path_parameter("domain", "The domain's name")
_USER = _path_parameter("user", "The user profile's name, in the domain")

IN_DOMAIN: dict[str, Any] = {"parameters": [_DOMAIN]}
OF_USER: dict[str, Any] = {"parameters": [_DOMAIN, _USER]}

__all__ = [
    "API_PREFIX",
    "DOMAIN_WEBHOOKS",
    "IN_DOMAIN",
    "JOB_FILES",
    "OF_USER",
    "ONE_APP",
    "ONE_JOB",
    "USER_APPS",
    "USER_JOBS",
    "USER_WEBHOOKS",
    "api_router",
    "path_regex",
]
