"""Settings: built from PROFILERHUB_* variables, derived defaults, placeholder secrets refused."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from profilerhub_core.settings import Settings


def test_every_setting_has_a_description() -> None:
    undocumented = [name for name, f in Settings.model_fields.items() if not f.description]
    assert undocumented == []


def test_defaults_live_in_the_home_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PROFILERHUB_HOME", str(tmp_path))
    settings = Settings()
    assert settings.home == tmp_path.resolve()
    assert settings.database_url == f"sqlite:///{tmp_path.resolve() / 'profilerhub.db'}"
    assert settings.storage_url == (tmp_path.resolve() / "storage").as_uri()
    assert settings.public_url == "http://127.0.0.1:8080"


def test_environment_variables_set_fields(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PROFILERHUB_HOME", str(tmp_path))
    monkeypatch.setenv("PROFILERHUB_DATABASE_URL", "postgresql+psycopg://u:p@db:5432/ph")
    monkeypatch.setenv("PROFILERHUB_STORAGE_URL", "s3://bucket/prefix")
    monkeypatch.setenv("PROFILERHUB_PORT", "9999")
    settings = Settings()
    assert settings.database_url.startswith("postgresql+psycopg://")
    assert settings.storage_url == "s3://bucket/prefix"
    assert settings.port == 9999


@pytest.mark.parametrize("secret", ["changeme", "admin", "short"])
def test_production_refuses_placeholder_secrets(secret: str, tmp_path: Path) -> None:
    with pytest.raises(ValidationError, match="placeholder"):
        Settings(home=tmp_path, environment="production", secret_key=secret)  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match="placeholder"):
        Settings(home=tmp_path, environment="production", secret_key="k" * 32, admin_token=secret)  # type: ignore[arg-type]


def test_production_requires_a_secret_key(tmp_path: Path) -> None:
    with pytest.raises(ValidationError, match="PROFILERHUB_SECRET_KEY"):
        Settings(home=tmp_path, environment="production")
    Settings(home=tmp_path, environment="production", secret_key="k" * 32)  # type: ignore[arg-type]


def test_development_generates_and_keeps_a_private_secret_key(tmp_path: Path) -> None:
    first = Settings(home=tmp_path).signing_key()
    assert Settings(home=tmp_path).signing_key() == first
    assert (tmp_path / "secret-key").stat().st_mode & 0o777 == 0o600


@pytest.mark.parametrize(
    "value", ["apps.example.com", "ftp://apps.example.com", "https://apps.example.com/apps", "https://"]
)
def test_an_app_subdomain_host_that_is_not_an_origin_is_refused_at_start(value: str, tmp_path: Path) -> None:
    with pytest.raises(ValidationError, match="scheme://host"):
        Settings(home=tmp_path, app_subdomain_host=value)


def test_an_app_subdomain_host_is_kept_as_an_origin(tmp_path: Path) -> None:
    settings = Settings(home=tmp_path, app_subdomain_host="HTTPS://Apps.Example.com:8443/")
    assert settings.app_subdomain_host == "https://apps.example.com:8443"
    assert Settings(home=tmp_path).app_subdomain_host == ""  # unset: apps stay under the hub's origin
    # A default port is dropped, as browsers drop it from the Origin they send.
    assert Settings(home=tmp_path, app_subdomain_host="https://apps.example.com:443").app_subdomain_host == (
        "https://apps.example.com"
    )


def test_an_app_subdomain_host_above_the_hubs_own_host_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValidationError, match="must not be a parent of the hub's own host"):
        Settings(home=tmp_path, public_url="https://hub.example.com", app_subdomain_host="https://example.com")
