"""``/me``: who the token belongs to."""

from __future__ import annotations

from fastapi import APIRouter

from profilerhub_hub.deps import CallerDep
from profilerhub_hub.schemas import MeRead

router = APIRouter(tags=["me"])


@router.get("/me")
async def me(caller: CallerDep) -> MeRead:
    return MeRead.of(caller)
