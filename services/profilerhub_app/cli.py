"""``profilerhub app``: run one user's profiler app (the spawner starts it; rarely run by hand)."""

from __future__ import annotations

import typer

from profilerhub.cli.toolkit import require


def register(app: typer.Typer) -> None:
    @app.command("app")
    def run_app(
        app_type: str = typer.Option(
            "DetailedProfiler", "--type", help="DetailedProfiler (the profiler app) or TensorBoard."
        ),
    ) -> None:
        """Run one app, configured by PROFILERHUB_APP_* variables set by the spawner."""
        require("starlette", "server")
        from profilerhub_app.__main__ import factory_for, run
        from profilerhub_app.settings import MissingSetting

        try:
            run(factory_for(app_type))
        except (MissingSetting, ValueError) as exc:
            raise typer.BadParameter(str(exc)) from None
