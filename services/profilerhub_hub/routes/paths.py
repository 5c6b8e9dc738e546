"""The ``{domain}`` and ``{user}`` path parameters, declared for the OpenAPI document.

``deps.allow`` reads them from ``request.path_params`` so routes never repeat them, and FastAPI
therefore never sees them; without these declarations the document names paths whose parameters
it does not describe (client generators and schemathesis refuse such operations). Routes pass
``openapi_extra=IN_DOMAIN`` or ``OF_USER``: it costs nothing per request.
"""

from __future__ import annotations

from typing import Any

from profilerhub_core.names import NAME_PATTERN


def _path_parameter(name: str, description: str) -> dict[str, Any]:
    schema = {"type": "string", "title": name.capitalize(), "pattern": NAME_PATTERN}
    return {"name": name, "in": "path", "required": True, "description": description, "schema": schema}


_DOMAIN = _path_parameter("domain", "The domain's name")
_USER = _path_parameter("user", "The user profile's name, in the domain")

IN_DOMAIN: dict[str, Any] = {"parameters": [_DOMAIN]}
OF_USER: dict[str, Any] = {"parameters": [_DOMAIN, _USER]}

__all__ = ["IN_DOMAIN", "OF_USER"]
