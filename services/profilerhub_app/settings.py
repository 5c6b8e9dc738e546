"""Settings of one profiler app process, read from its environment (``PROFILERHUB_APP_…``).

The spawner sets them; an app is told who owns it and how to check the hub's tokens, and
nothing else (no database URL, no signing key).  A plain dataclass rather than pydantic: the
app starts in a fraction of a second and idles in little memory, and these are a few strings.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, fields

PREFIX = "PROFILERHUB_APP_"


class MissingSetting(ValueError):
    """A required ``PROFILERHUB_APP_*`` variable is not set; ``names`` lists them."""

    def __init__(self, names: list[str]) -> None:
        super().__init__(f"set {', '.join(names)} (the spawner normally does)")
        self.names = names


@dataclass(frozen=True)
class AppServiceSettings:
    """One app instance's configuration; each field is ``PROFILERHUB_APP_<NAME>``."""

    id: str
    """The app id: the token audience and the base path /apps/{id}/."""
    owner: str
    """The owner's user name, shown on the page."""
    owner_id: str
    """The owner's user id: the token subject."""
    public_key: str
    """PEM of the hub's Ed25519 public key that signs app tokens."""
    domain: str = ""
    """The owner's domain name."""
    domain_id: str = ""
    """The owner's domain id: with ``owner_id``, the owner's folder ``{domain_id}/{user_id}/`` in storage."""
    type: str = "DetailedProfiler"
    """The app type."""
    hub_url: str = ""
    """The hub's base URL, for links back to it."""
    hub_api_url: str = ""
    """The hub's URL as this app reaches it, to ask for its owner's jobs (default: ``hub_url``)."""
    host: str = "127.0.0.1"
    """Interface to listen on."""
    port: int = 0
    """Port to listen on; 0 picks a free one."""
    port_file: str = ""
    """Where to write {"port", "pid"} once listening (the spawner reads it)."""
    storage_url: str = ""
    """The hub's storage URL; the app reads only its owner's folder under it."""
    s3_endpoint_url: str = ""
    """Endpoint of an S3-compatible store, if not AWS."""
    cache_dir: str = ""
    """Local folder for the timelines the app maps (default: a folder under the system temp dir)."""
    open_timelines: int = 4
    """Timelines kept open at once (least recently used closed first)."""

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> AppServiceSettings:
        environ = os.environ if environ is None else environ
        values: dict[str, object] = {}
        missing = []
        for f in fields(cls):
            raw = environ.get(PREFIX + f.name.upper())
            if raw is None:
                if f.default is f.default_factory:  # no default (both are MISSING)
                    missing.append(PREFIX + f.name.upper())
                continue
            values[f.name] = int(raw) if f.type in (int, "int") else raw
        if missing:
            raise MissingSetting(missing)
        return cls(**values)  # type: ignore[arg-type]

    @property
    def base_path(self) -> str:
        return f"/apps/{self.id}/"
