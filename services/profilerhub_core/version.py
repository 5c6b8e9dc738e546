"""The installed ProfilerHub version, from the distribution's metadata.

The version is written once, as ``profilerhub.__version__`` (the SDK, which hatch reads when it
builds); server packages read it from the installed metadata instead of importing the SDK.
"""

from __future__ import annotations

from functools import cache
from importlib.metadata import version


@cache
def installed_version() -> str:
    return version("profilerhub")


__all__ = ["installed_version"]
