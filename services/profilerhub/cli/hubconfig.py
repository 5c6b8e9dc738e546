"""Where the terminal commands find the hub: its URL and an API token.

Looked up in this order, the first that has a value wins, each key on its own:

1. the environment: ``PROFILERHUB_URL``, ``PROFILERHUB_TOKEN``;
2. the config file: ``$PROFILERHUB_CONFIG``, else ``$XDG_CONFIG_HOME/profilerhub/config.toml``
   (``~/.config/profilerhub/config.toml``), written by ``profilerhub login`` / ``config set``::

       url = "http://127.0.0.1:8080"
       token = "phk_…"

The file holds a secret, so it is written with mode 0600 (its folder 0700), and a file that
others may read is refused until its mode is fixed, as ``ssh`` does with keys.
"""

from __future__ import annotations

import json
import os
import stat
import tomllib
from dataclasses import dataclass
from pathlib import Path

KEYS = ("url", "token")
ENV = {"url": "PROFILERHUB_URL", "token": "PROFILERHUB_TOKEN"}


class ConfigError(Exception):
    """The config file cannot be read or written; ``str()`` says what to do."""


def config_path() -> Path:
    explicit = os.environ.get("PROFILERHUB_CONFIG")
    if explicit:
        return Path(explicit).expanduser()
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "profilerhub" / "config.toml"


def read_file(path: Path | None = None) -> dict[str, str]:
    """The file's keys (``{}`` when there is no file)."""
    path = path or config_path()
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        return {}
    if stat.S_IMODE(mode) & 0o077:
        raise ConfigError(
            f"{path} holds a token but others may read it (mode {stat.S_IMODE(mode):o}); "
            f"run `chmod 600 {path}`"
        )
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(
            f"cannot read {path} ({exc}); fix it, or write it again with `profilerhub login`"
        ) from None
    return {key: str(data[key]) for key in KEYS if isinstance(data.get(key), str) and data[key]}


def write_file(values: dict[str, str], path: Path | None = None) -> Path:
    """Replace the file with ``values`` (mode 0600, atomically)."""
    path = path or config_path()
    lines = ["# Written by `profilerhub login`; it holds an API token: keep it private (mode 0600)."]
    # A JSON string of printable text is a valid TOML basic string.
    lines += [f"{key} = {json.dumps(values[key])}" for key in KEYS if values.get(key)]
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        partial = path.with_name(path.name + ".partial")
        fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write("\n".join(lines) + "\n")
        os.chmod(partial, 0o600)  # an existing partial file kept its old mode through O_CREAT
        os.replace(partial, path)
    except OSError as exc:
        raise ConfigError(f"cannot write {path}: {exc.strerror or exc}") from exc
    return path


@dataclass(frozen=True)
class HubConfig:
    """The hub to talk to, and where each value came from (for messages)."""

    url: str | None
    token: str | None
    url_from: str
    token_from: str

    @classmethod
    def load(cls) -> HubConfig:
        path = config_path()
        stored: dict[str, str] | None = None
        found: dict[str, tuple[str | None, str]] = {}
        for key in KEYS:
            value = os.environ.get(ENV[key]) or None
            if value is not None:
                found[key] = (value, ENV[key])
                continue
            if stored is None:
                stored = read_file(path)
            found[key] = (stored.get(key), str(path))
        return cls(
            url=(found["url"][0] or "").rstrip("/") or None,
            token=found["token"][0],
            url_from=found["url"][1],
            token_from=found["token"][1],
        )


def mask(token: str | None) -> str:
    """Enough of a token to recognise it, never enough to use it."""
    if not token:
        return "(none)"
    return token[:8] + "…" if len(token) > 12 else "…"


__all__ = ["ENV", "KEYS", "ConfigError", "HubConfig", "config_path", "mask", "read_file", "write_file"]
