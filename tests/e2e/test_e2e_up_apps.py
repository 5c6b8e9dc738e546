"""`profilerhub up` with apps: embedded Redis, worker and beat; a clean stop; apps come back."""

from __future__ import annotations

from typing import Any

import httpx
import psutil

from tests.e2e.apps_stack import FAST
from tests.support.hub import STACK_HUB_WORKERS, auth, own_token, wait_for


def test_up_runs_apps_leaves_nothing_behind_and_brings_them_back(hub_process: Any) -> None:
    env = {k: v for k, v in FAST.items() if k != "PROFILERHUB_SECRET_KEY"}
    env["PROFILERHUB_HUB_WORKERS"] = STACK_HUB_WORKERS
    up = hub_process("up", env=env)
    admin = auth(up.admin_token())
    with httpx.Client(base_url=up.url, timeout=30) as client:
        assert client.get("/readyz").json()["checks"]["redis"] == "ok"  # the embedded Redis
        client.post("/api/v1/domains", json={"name": "d1"}, headers=admin).raise_for_status()
        client.post("/api/v1/domains/d1/users", json={"name": "alice"}, headers=admin).raise_for_status()
        alice = auth(own_token(client, admin, "d1", "alice"))  # hers: invited, her password
        app_id = client.post("/api/v1/domains/d1/users/alice/apps", json={}, headers=alice).json()["app_id"]
        describe = "/api/v1/domains/d1/users/alice/apps/DetailedProfiler/default"
        wait_for(
            lambda: client.get(describe, headers=alice).json()["status"] == "InService", "app InService", 60
        )

    everything = psutil.Process(up.process.pid).children(recursive=True)
    names = " ".join(" ".join(p.cmdline()) for p in everything)
    assert "redis-server" in names and "worker" in names and "beat" in names and "profilerhub_app" in names
    assert up.stop() == 0
    gone, alive = psutil.wait_procs(everything, timeout=15)
    assert [p for p in alive if p.is_running() and p.status() != psutil.STATUS_ZOMBIE] == []

    again = hub_process("up", home=up.home, env=env)
    with httpx.Client(base_url=again.url, timeout=30) as client:

        def opens() -> bool:
            return client.get(f"/apps/{app_id}/", headers=alice).status_code == 200

        wait_for(opens, "the app open again after `up` restarted", 180)
        assert client.get(describe, headers=alice).json()["status"] == "InService"
    assert again.stop() == 0
