"""The API's routers; ``create_app`` mounts each under ``/api/v1`` (and the health router itself,
at the root and under the prefix).

A feature adds its router module to ``api_routers`` (kept flat: nested routers cost time on
every request's route matching).
"""

from fastapi import APIRouter

from profilerhub_hub.routes import (
    access_keys,
    accounts,
    app_owner,
    apps,
    audit,
    domains,
    jobs,
    me,
    signin,
    tokens,
    users,
    webhooks,
)

api_routers: list[APIRouter] = [
    module.router
    for module in (
        domains,
        users,
        tokens,
        access_keys,
        accounts,
        signin,
        me,
        audit,
        apps,
        jobs,
        app_owner,
        webhooks,
    )
]

__all__ = ["api_routers"]
