"""``profilerhub app``: run one user's profiler app (the spawner starts it; rarely run by hand)."""

from __future__ import annotations

import typer

from profilerhub.cli._extras import require


def register(app: typer.Typer) -> None:
    @app.command("app")
    def run_app() -> None:
        """Run one profiler app, configured by PROFILERHUB_APP_* variables set by the spawner."""
        require("fastapi", "server")
        from pydantic import ValidationError

        from profilerhub_app.__main__ import run

        try:
            run()
        except ValidationError as exc:
            missing = ", ".join(f"PROFILERHUB_APP_{str(e['loc'][0]).upper()}" for e in exc.errors())
            raise typer.BadParameter(f"set {missing} (the spawner normally does)") from None
