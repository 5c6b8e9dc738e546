"""Per-domain settings, stored as JSON on ``Domain.settings`` and read through this model."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class DomainSettings(BaseModel):
    """What a domain's administrators (and the platform) tune. Missing keys take these defaults."""

    model_config = ConfigDict(extra="forbid")

    idle_minutes: int = Field(120, ge=0, le=7 * 24 * 60, description="Delete apps idle this long; 0 = never.")
    users_manage_own_apps: bool = Field(True, description="Users may create and delete their own apps.")
    allow_impersonation: bool = Field(
        False,
        description="Tokens and sign-in links that an administrator made for a user may open that "
        "user's apps (every such opening is audited as impersonation). Off: only the user's own.",
    )
    create_users_on_sign_in: bool = Field(
        False,
        description="Someone signing in through OpenID Connect whose domain claim maps here gets a user "
        "profile (role user) on first sign-in. Off: only existing users may sign in.",
    )
    max_live_apps: int = Field(
        50, ge=0, le=10_000, description="Live (not Deleted) apps allowed in the domain."
    )
    job_idle_hours: int = Field(
        24,
        ge=0,
        le=90 * 24,
        description="An InProgress job with no upload for this long is closed (its run died): ingested "
        "as a partial job when its job.json was uploaded, else Failed; 0 = never.",
    )
    user_storage_quota_bytes: int = Field(
        0,
        ge=0,
        le=1 << 60,
        description="Raw trace bytes each user of the domain may keep stored (all their jobs); an "
        "upload that would pass it answers 413 StorageQuotaExceeded; 0 = no quota.",
    )
    rules: list[dict[str, Any]] = Field(
        default_factory=list,
        max_length=20,
        description="Rules a job runs when it configures none (docs/rules.md); empty = ProfilerReport.",
    )

    @classmethod
    def of(cls, stored: dict[str, Any] | None) -> DomainSettings:
        """The effective settings of a domain row (stored keys over defaults; unknown keys ignored)."""
        stored = stored or {}
        return cls.model_validate({k: v for k, v in stored.items() if k in cls.model_fields})


# What a domain's own administrators may change (``UpdateDomainSettings``); the rest (quotas,
# impersonation, users made on first sign-in, rules) is the platform's (``UpdateDomain``).
DOMAIN_ADMIN_SETTINGS = frozenset({"idle_minutes", "users_manage_own_apps"})

__all__ = ["DOMAIN_ADMIN_SETTINGS", "DomainSettings"]
