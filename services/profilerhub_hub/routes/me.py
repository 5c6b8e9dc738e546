"""``/me``: who the token belongs to."""

from __future__ import annotations

from profilerhub_hub.deps import CallerDep
from profilerhub_hub.routes.paths import api_router
from profilerhub_hub.schemas import MeRead

router = api_router(tags=["me"])


@router.get("/me")
async def me(caller: CallerDep) -> MeRead:
    return MeRead.of(caller)
