"""The database: models, engines and sessions, and the shipped migrations.

from profilerhub_core.db import make_engine, session_factory, models

Imported lazily: ``profilerhub_core.db.cli`` (the ``profilerhub db`` command) is gathered by every
``profilerhub`` invocation, and SQLAlchemy costs about a second to import; a terminal command
that never touches the database should not pay it (nor need the server extra installed).
"""

from __future__ import annotations

import importlib
from typing import Any

__all__ = ["make_engine", "models", "session_factory"]


def __getattr__(name: str) -> Any:
    if name == "models":
        return importlib.import_module("profilerhub_core.db.models")
    if name in ("make_engine", "session_factory"):
        return getattr(importlib.import_module("profilerhub_core.db.session"), name)
    raise AttributeError(f"module 'profilerhub_core.db' has no attribute {name!r}")
