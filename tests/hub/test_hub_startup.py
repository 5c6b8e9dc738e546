"""The hub starts without the analysis engine's heavy dependencies nor botocore: a fresh interpreter
builds the hub's app (``create_app``) and numpy, pyarrow, the rules and botocore have not been
imported, nor what only a cold path needs (httpx, joserfc and cryptography, authlib, argon2,
alembic). The hub needs the engine only for a job's report, metrics, tensors or rule checks and
botocore only for the AWS doors, on the request that asks; its start (and every restart of every
hub process) does not wait for them. The app serves the routes its modules built, never building
them a second time.

How long the start takes is a benchmark's figure: ``benchmarks/bench_hub_start.py``.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from profilerhub_core.settings import Settings
from profilerhub_hub.console import invitations
from profilerhub_hub.console.routes import router as console_router
from profilerhub_hub.main import create_app
from profilerhub_hub.routes import api_routers, health

NOT_AT_START = (
    "numpy",
    "pyarrow",
    "botocore",
    # cold paths, imported by the request that needs them: the first request to an app (the
    # app-token key, the proxy's client), a sign-in with OpenID Connect, a password checked
    "httpx",
    "joserfc",
    "cryptography",
    "authlib",
    "argon2",
    "alembic",
    "profilerhub_analysis.rules.base",
    "profilerhub_analysis.series",
)

BUILD = """
import json, sys
from profilerhub_core.settings import Settings
from profilerhub_hub.main import create_app
home = sys.argv[1]
create_app(Settings(home=home, database_url=f"sqlite:///{home}/hub.db"), check_schema=False)
print(json.dumps(sorted(sys.modules)))
"""


def test_the_hub_builds_its_app_without_numpy_pyarrow_or_the_rules(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", BUILD, str(tmp_path)], capture_output=True, text=True, check=True, timeout=120
    )
    loaded = set(json.loads(done.stdout.strip().splitlines()[-1]))
    assert "profilerhub_hub.main" in loaded  # the build did run
    assert [m for m in NOT_AT_START if m in loaded] == []


def test_the_app_serves_the_routes_its_modules_built_never_a_second_build(tmp_path: Path) -> None:
    """``create_app`` adds each route module's routes as built (``profilerhub_hub.mount``): the very
    objects, with their full paths. ``include_router`` would build every route again for the app,
    on the first request after a start."""
    app = create_app(Settings(home=tmp_path, database_url=f"sqlite:///{tmp_path}/hub.db"), check_schema=False)
    built = [
        r
        for router in (*api_routers, health.root_router, console_router, invitations.router)
        for r in router.routes
    ]
    served = {id(route) for route in app.router.routes}
    assert built and all(id(route) in served for route in built)
    assert all(hasattr(route, "path") for route in app.router.routes)  # an included router has none
    assert "/api/v1/healthz" in {getattr(route, "path", "") for route in app.router.routes}
