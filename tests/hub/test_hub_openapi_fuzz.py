"""schemathesis over the hub's OpenAPI document, against a real ``profilerhub hub`` process:
no request gets a 5xx, and every status the hub answers is one the document declares.

Bounded by example count (``MAX_EXAMPLES`` per operation, a fixed seed), not by time. One run
with the path parameters generated (mostly 404s and 422s), one with them fixed to a seeded
domain, user, job and app (so routes reach real records and answer 2xx, 409, …). Revoking every
token of a user would revoke the run's own token, so it runs apart, with a token of its own.
The figures (operations, test cases, failures) are printed (``pytest -s`` shows them).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.hub import auth, cli_command

ADMIN = "fuzz-admin-token-0123456789abcdefgh"
MAX_EXAMPLES = 10
SEED = 1
REVOKE_EVERYWHERE = "^revoke_everywhere"


def _config(path: Path, values: dict[str, str]) -> Path:
    """A schemathesis.toml fixing the path parameters ``values`` names (none: all generated)."""
    lines = ["[parameters]"] + [f'"path.{name}" = {json.dumps(value)}' for name, value in values.items()]
    path.write_text("\n".join(lines) + "\n")
    return path


def _schemathesis(url: str, token: str, config: Path, *selection: str) -> tuple[str, dict[str, int]]:
    command = [
        str(Path(sys.executable).with_name("schemathesis")), "--config-file", str(config), "run",
        f"{url}/api/v1/openapi.json", "-H", f"Authorization: Bearer {token}",
        "--checks", "not_a_server_error,status_code_conformance", "--phases", "examples,coverage,fuzzing",
        "--max-examples", str(MAX_EXAMPLES), "--seed", str(SEED), "--no-color", *selection,
    ]  # fmt: skip
    env = {k: v for k, v in os.environ.items() if not k.startswith("PROFILERHUB_")} | {"COLUMNS": "120"}
    done = subprocess.run(command, capture_output=True, text=True, timeout=1500, env=env, cwd=config.parent)
    out = done.stdout + done.stderr
    figures = {
        "operations": int(re.search(r"Tested: (\d+)", out).group(1)),  # type: ignore[union-attr]
        "generated": int(re.search(r"(\d+) generated", out).group(1)),  # type: ignore[union-attr]
        "failures": len(re.findall(r"^\s*- ST\d+ |^[_]+ [A-Z]+ /", out, re.M)),
        "exit": done.returncode,
    }
    return out, figures


@pytest.mark.slow
@pytest.mark.timeout(1500)  # a hang guard: the run is bounded by example count, not time
def test_schemathesis_finds_no_server_error_and_no_undocumented_status(
    hub_process: Any, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    env = {k: v for k, v in os.environ.items() if not k.startswith("PROFILERHUB_")}
    env |= {"PROFILERHUB_HOME": str(home), "PROFILERHUB_DATABASE_URL": f"sqlite:///{tmp_path / 'hub.db'}"}
    assert subprocess.run([*cli_command(), "db", "upgrade"], env=env, capture_output=True).returncode == 0
    hub = hub_process("hub", home=home, database_url=env["PROFILERHUB_DATABASE_URL"],
                      env={"PROFILERHUB_ADMIN_TOKEN": ADMIN, "PROFILERHUB_HUB_WORKERS": "1"})  # fmt: skip
    api, admin = f"{hub.url}/api/v1", auth(ADMIN)
    assert httpx.post(f"{api}/domains", json={"name": "d1"}, headers=admin).status_code == 201
    assert httpx.post(f"{api}/domains/d1/users", json={"name": "alice"}, headers=admin).status_code == 201
    user = f"{api}/domains/d1/users/alice"
    job = httpx.post(f"{user}/jobs", json={"name": "run"}, headers=admin).json()["job_id"]
    app = httpx.post(f"{user}/apps", json={}, headers=admin).json()["app_id"]
    real = _config(tmp_path / "real.toml", {"domain": "d1", "user": "alice", "job_id": job, "app_id": app})
    generated = _config(tmp_path / "generated.toml", {})
    everything_but = ("--exclude-operation-id-regex", REVOKE_EVERYWHERE)
    for name, config in (("generated paths", generated), ("seeded paths", real)):
        out, figures = _schemathesis(hub.url, ADMIN, config, *everything_but)
        print(f"schemathesis, {name}: {figures}")
        assert figures["exit"] == 0 and figures["failures"] == 0, out[-6000:]
        assert figures["operations"] >= 37, out[-2000:]

    own = httpx.post(f"{user}/tokens", json={"note": "fuzz"}, headers=admin).json()["token"]
    out, apart = _schemathesis(hub.url, own, real, "--include-operation-id-regex", REVOKE_EVERYWHERE)
    print(f"schemathesis, revoke everywhere: {apart}")
    assert apart["exit"] == 0 and apart["failures"] == 0 and apart["operations"] == 1, out[-6000:]
