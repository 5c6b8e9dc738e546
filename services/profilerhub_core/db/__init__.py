"""The database: models, engines and sessions, and the shipped migrations.

from profilerhub_core.db import make_engine, session_factory, models
"""

from profilerhub_core.db import models
from profilerhub_core.db.session import make_engine, session_factory

__all__ = ["make_engine", "models", "session_factory"]
