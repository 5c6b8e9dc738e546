"""Request and response bodies of the app API (``AppCreate`` in, ``AppRead`` out)."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, ConfigDict, Field, StrictInt

from profilerhub_core.db.models import App, AppStatus, AppType
from profilerhub_core.names import ResourceName

DEFAULT_PRESIGNED_SECONDS = 300


class AppCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")

    app_type: AppType = Field(AppType.DetailedProfiler, description="DetailedProfiler or TensorBoard.")
    app_name: ResourceName = Field("default", description="Unique among the user's live apps of this type.")


class AppRead(BaseModel):
    app_id: str
    domain: str
    user: str
    app_type: AppType
    app_name: str
    status: AppStatus
    failure_reason: str | None
    url: str = Field(description="Where the owner opens the app, through the hub: /apps/{app_id}/")
    created_at: datetime
    status_changed_at: datetime
    last_activity_at: datetime | None

    @classmethod
    def of(cls, app: App, domain: str, user: str) -> AppRead:
        return cls(
            app_id=app.id,
            domain=domain,
            user=user,
            app_type=app.app_type,
            app_name=app.app_name,
            status=app.status,
            failure_reason=app.failure_reason,
            url=app_path(app.id),
            created_at=app.created_at,
            status_changed_at=app.status_changed_at,
            last_activity_at=app.last_activity_at,
        )


class PresignedUrlCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")

    expires_in_seconds: StrictInt = Field(
        300, ge=5, le=300, description="How long the URL may be used (once)."
    )


class PresignedUrlRead(BaseModel):
    url: str = Field(description="Open once in a browser: sets the app's session cookie and shows the app.")
    expires_at: datetime


def app_path(app_id: str) -> str:
    return f"/apps/{app_id}/"


__all__ = [
    "DEFAULT_PRESIGNED_SECONDS",
    "AppCreate",
    "AppRead",
    "PresignedUrlCreate",
    "PresignedUrlRead",
    "app_path",
]
