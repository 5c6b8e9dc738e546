"""The distribution's shape: packages import at top level and the SDK stays light."""

from __future__ import annotations

import subprocess
import sys

import pytest


def test_packages_import_at_top_level() -> None:
    import profilerhub
    import profilerhub_analysis
    import profilerhub_app
    import profilerhub_core
    import profilerhub_hub
    import profilerhub_stack
    import profilerhub_worker

    for module in (
        profilerhub,
        profilerhub_core,
        profilerhub_analysis,
        profilerhub_hub,
        profilerhub_app,
        profilerhub_worker,
        profilerhub_stack,
    ):
        assert module.__file__ is not None and "site-packages/services" not in module.__file__


def test_cli_help_lists_commands() -> None:
    command = [sys.executable, "-m", "profilerhub.cli.main", "--help"]
    done = subprocess.run(command, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "profilerhub" in done.stdout.lower()


def test_cli_fails_loudly_when_a_server_command_is_not_installed(monkeypatch: pytest.MonkeyPatch) -> None:
    from profilerhub.cli import main

    installed = [ep for ep in main.entry_points(group=main.ENTRY_POINT_GROUP) if ep.name != "hub"]
    monkeypatch.setattr(main, "entry_points", lambda group: installed)
    with pytest.raises(main.MissingCommand, match="hub.*make install"):
        main._server_modules()


def test_a_server_command_gets_an_app_with_that_command_alone_after_the_same_check(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from profilerhub.cli import main

    assert main.server_command(["hub", "--port", "8081"]) == "hub"
    assert main.server_command(["beat"]) is None and main.server_command(["--help"]) is None
    names = {command.name or (command.callback.__name__ if command.callback else "")
             for command in main._build("hub").registered_commands}  # fmt: skip
    assert names == {"version", "hub"}
    installed = [ep for ep in main.entry_points(group=main.ENTRY_POINT_GROUP) if ep.name != "up"]
    monkeypatch.setattr(main, "entry_points", lambda group: installed)
    with pytest.raises(main.MissingCommand, match="up.*make install"):
        main._build("hub")


def test_cli_fails_loudly_when_a_command_module_does_not_import() -> None:
    from profilerhub.cli import main

    with pytest.raises(main.MissingCommand, match="profilerhub_hub.clii does not import"):
        main._register("profilerhub_hub.clii")


def test_every_server_command_comes_from_the_package_that_owns_it() -> None:
    from profilerhub.cli import main

    owners = {ep.name: ep.value.split(".")[0] for ep in main.entry_points(group=main.ENTRY_POINT_GROUP)}
    assert owners == {
        "up": "profilerhub_stack",
        "hub": "profilerhub_hub",
        "worker": "profilerhub_worker",
        "app": "profilerhub_app",
        "db": "profilerhub_core",
    }
    names = {command.name or (command.callback.__name__ if command.callback else "") for command in
             main.app.registered_commands} | {group.name for group in main.app.registered_groups}
    assert {"up", "hub", "worker", "beat", "app", "db", "analyze", "upload", "version"} <= names
