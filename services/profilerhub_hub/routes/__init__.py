"""The API's routers, their paths under ``/api/v1`` (``paths.api_router``); ``create_app`` adds
their routes to the app as built (``profilerhub_hub.mount``), and the health probes' at the root as well.

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
    health,
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
        health,
    )
]

__all__ = ["api_routers"]
