"""The stderr console every command prints its messages and progress on (rich only)."""

from __future__ import annotations

from rich.console import Console

err_console = Console(stderr=True)

__all__ = ["err_console"]
