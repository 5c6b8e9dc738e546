"""Per-domain settings, stored as JSON on ``Domain.settings`` and read through this model."""

from __future__ import annotations

import re
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

# A Kubernetes resource quantity ("500m", "2", "1.5", "512Mi", "4G", "1e3", "250u"), or "" for
# the worker's default (PROFILERHUB_K8S_APP_*): a number, then a binary or decimal SI suffix or a
# decimal exponent, as Kubernetes' own grammar has it.
_NUMBER = r"(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)"
_SUFFIXES = r"(?:[eE][+-]?[0-9]+|Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E)?"
QUANTITY_PATTERN = rf"^$|^{_NUMBER}{_SUFFIXES}$"
Quantity = Annotated[str, Field(pattern=QUANTITY_PATTERN, max_length=20)]
_SUFFIX = {
    "n": 1e-9, "u": 1e-6, "m": 1e-3, "": 1, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15, "E": 1e18,
    "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60,
}  # fmt: skip
_PARTS = re.compile(rf"({_NUMBER})([eE][+-]?[0-9]+|[A-Za-z]*)")
APP_RESOURCES = ("app_cpu_request", "app_cpu_limit", "app_memory_request", "app_memory_limit")


def quantity_value(quantity: str) -> float:
    """The number a quantity stands for (``"500m"`` -> 0.5, ``"1Ki"`` -> 1024, ``"1e3"`` -> 1000);
    ``ValueError`` for what is not one."""
    parts = _PARTS.fullmatch(quantity)
    if parts is None or (parts[2] not in _SUFFIX and parts[2][:1] not in ("e", "E")):
        raise ValueError(f"{quantity!r} is not a Kubernetes quantity (e.g. 500m, 2, 512Mi)")
    number, suffix = parts.groups()
    scale = 10.0 ** int(suffix[1:]) if suffix not in _SUFFIX else _SUFFIX[suffix]
    return float(number) * scale


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
    app_cpu_request: Quantity = Field(
        "", description="CPU request of each app pod (e.g. 500m); empty: the worker's."
    )
    app_cpu_limit: Quantity = Field(
        "", description="CPU limit of each app pod (e.g. 2); empty: the worker's."
    )
    app_memory_request: Quantity = Field(
        "", description="Memory request of each app pod (e.g. 512Mi); empty: the worker's."
    )
    app_memory_limit: Quantity = Field(
        "", description="Memory limit of each app pod (e.g. 4Gi); empty: the worker's."
    )
    rules: list[dict[str, Any]] = Field(
        default_factory=list,
        max_length=20,
        description="Rules a job runs when it configures none (docs/rules.md); empty = ProfilerReport.",
    )

    @model_validator(mode="after")
    def _requests_within_limits(self) -> DomainSettings:
        for kind in ("cpu", "memory"):
            request, limit = getattr(self, f"app_{kind}_request"), getattr(self, f"app_{kind}_limit")
            if request and limit and quantity_value(request) > quantity_value(limit):
                raise ValueError(f"app_{kind}_request ({request}) is more than app_{kind}_limit ({limit})")
        return self

    def app_resources(self) -> dict[str, str]:
        """The app pod resources this domain sets (``cpu_request`` …), without the unset ones."""
        return {
            name.removeprefix("app_"): getattr(self, name) for name in APP_RESOURCES if getattr(self, name)
        }

    @classmethod
    def of(cls, stored: dict[str, Any] | None) -> DomainSettings:
        """The effective settings of a domain row (stored keys over defaults; unknown keys ignored)."""
        stored = stored or {}
        return cls.model_validate({k: v for k, v in stored.items() if k in cls.model_fields})


# What a domain's own administrators may change (``UpdateDomainSettings``); the rest (quotas,
# impersonation, users made on first sign-in, rules) is the platform's (``UpdateDomain``).
DOMAIN_ADMIN_SETTINGS = frozenset({"idle_minutes", "users_manage_own_apps"})

__all__ = [
    "APP_RESOURCES",
    "DOMAIN_ADMIN_SETTINGS",
    "QUANTITY_PATTERN",
    "DomainSettings",
    "Quantity",
    "quantity_value",
]
