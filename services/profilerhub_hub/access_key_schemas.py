"""Bodies of the access-key routes (``/domains/{domain}/users/{user}/access-keys``)."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, Field

from profilerhub_core.db.models import ApiToken
from profilerhub_hub.schemas import RequestModel, TokenScope


class AccessKeyCreate(RequestModel):
    note: str = Field("", max_length=180, description="What the key is for.")
    scopes: list[TokenScope] | None = Field(
        None,
        min_length=1,
        description="Actions the key may perform; omitted: exactly the calling token's scopes.",
    )


class AccessKeyCreated(BaseModel):
    """The only response that contains the secret access key: store it now."""

    access_key_id: str
    secret_access_key: str
    token_id: str
    scopes: list[str]
    note: str
    created_at: datetime


class AccessKeyRead(BaseModel):
    access_key_id: str
    token_id: str
    note: str
    scopes: list[str]
    status: Literal["active", "revoked"]
    created_at: datetime
    last_used_at: datetime | None

    @classmethod
    def of(cls, token: ApiToken) -> AccessKeyRead:
        return cls(
            access_key_id=token.prefix,
            token_id=token.id,
            note=token.note,
            scopes=list(token.scopes),
            status="revoked" if token.revoked_at is not None else "active",
            created_at=token.created_at,
            last_used_at=token.last_used_at,
        )


__all__ = ["AccessKeyCreate", "AccessKeyCreated", "AccessKeyRead"]
