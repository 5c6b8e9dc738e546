"""The distribution's shape: packages import at top level and the SDK stays light."""

from __future__ import annotations

import subprocess
import sys


def test_packages_import_at_top_level() -> None:
    import profilerhub
    import profilerhub_analysis
    import profilerhub_app
    import profilerhub_core
    import profilerhub_hub
    import profilerhub_worker

    for module in (
        profilerhub,
        profilerhub_core,
        profilerhub_analysis,
        profilerhub_hub,
        profilerhub_app,
        profilerhub_worker,
    ):
        assert module.__file__ is not None and "site-packages/services" not in module.__file__


def test_cli_help_lists_commands() -> None:
    command = [sys.executable, "-m", "profilerhub.cli.main", "--help"]
    done = subprocess.run(command, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "profilerhub" in done.stdout.lower()
