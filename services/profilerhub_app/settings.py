"""Settings of one profiler app process, read from its environment (``PROFILERHUB_APP_…``).

The spawner sets them; an app is told who owns it and how to check the hub's tokens, and
nothing else (no database URL, no signing key).
"""

from __future__ import annotations

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict


class AppServiceSettings(BaseSettings):
    """One app instance's configuration."""

    model_config = SettingsConfigDict(env_prefix="PROFILERHUB_APP_", extra="ignore")

    id: str = Field(description="The app id; the token audience and the base path /apps/{id}/.")
    owner: str = Field(description="The owner's user name, shown on the page.")
    owner_id: str = Field(description="The owner's user id; the token subject.")
    domain: str = Field(default="", description="The owner's domain name.")
    type: str = Field(default="DetailedProfiler", description="The app type.")
    public_key: str = Field(description="PEM of the hub's Ed25519 public key that signs app tokens.")
    hub_url: str = Field(default="", description="The hub's base URL, for links back to it.")
    storage_url: str = Field(
        default="", description="The hub's storage URL; the app reads only its owner's folder."
    )
    s3_endpoint_url: str = Field(default="", description="Endpoint of an S3-compatible store, if not AWS.")
    host: str = Field(default="127.0.0.1", description="Interface to listen on.")
    port: int = Field(default=0, description="Port to listen on; 0 picks a free one.")
    port_file: str = Field(
        default="", description="Where to write {'port', 'pid'} once listening (the spawner reads it)."
    )

    @property
    def base_path(self) -> str:
        return f"/apps/{self.id}/"
