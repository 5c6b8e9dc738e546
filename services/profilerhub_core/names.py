"""Resource names: SageMaker's rule, so names are safe in URLs, storage keys and process names."""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import StringConstraints

NAME_PATTERN = r"^[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}$"
NAME_RE = re.compile(NAME_PATTERN)

# Use as a field type in request schemas: ``name: ResourceName``.
ResourceName = Annotated[str, StringConstraints(pattern=NAME_PATTERN, max_length=63)]


def is_valid_name(name: str) -> bool:
    return bool(NAME_RE.fullmatch(name))


__all__ = ["NAME_PATTERN", "ResourceName", "is_valid_name"]
