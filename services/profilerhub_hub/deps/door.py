"""``DoorDep``: the REST API's door onto the use cases (``profilerhub_hub.usecases``).

    def create_user_app(body: AppCreate, door: DoorDep, target: ...) -> AppRead:
        return _read(target, usecases.apps.create_app(door, target, body.app_type, body.app_name))

(Imported from here, not from ``deps``: the use cases import ``deps.targets`` themselves.)
"""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request

from profilerhub_hub.deps.session import request_session
from profilerhub_hub.services import services
from profilerhub_hub.usecases.door import Door, door_of


async def get_door(request: Request) -> Door:
    return door_of(services(request), request_session(request), "api")


DoorDep = Annotated[Door, Depends(get_door)]

__all__ = ["DoorDep", "get_door"]
