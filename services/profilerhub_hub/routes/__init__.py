"""The API's routers; ``api_router`` is mounted under ``/api/v1`` by ``create_app``."""

from fastapi import APIRouter

from profilerhub_hub.routes import apps, audit, domains, health, jobs, me, tokens, users

api_router = APIRouter()
for module in (domains, users, tokens, me, audit, health, apps, jobs):
    api_router.include_router(module.router)

__all__ = ["api_router"]
