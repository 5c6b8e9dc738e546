"""Findings of the issue-24 audit about single requests: F8 (redirects and Host), F6 (whose
X-Forwarded-For is read); F5 is in test_hub_rate_limits.py."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.hub import auth, migrate


@pytest.mark.parametrize("path", ["/api/v1/me/", "/api/v1/domains/", "/console/sign-in/"])
def test_a_trailing_slash_redirect_never_names_the_requests_host(client: Any, seed: Any, path: str) -> None:
    # F8: the router's redirect was built from Host (Location: http://evil.example/api/v1/me).
    answer = client.get(
        path + "?limit=5", headers={"host": "evil.example", **auth(seed.admin_token)}, follow_redirects=False
    )
    assert answer.status_code == 307, answer.text
    assert answer.headers["location"] == path.rstrip("/") + "?limit=5"


@pytest.mark.parametrize("path", ["//evil.example/", "/\\evil.example/", "//evil.example"])
def test_a_path_that_reads_as_a_host_is_not_redirected(client: Any, path: str) -> None:
    answer = client.get(f"http://testserver{path}", follow_redirects=False)
    assert answer.status_code == 404 and "location" not in answer.headers


def test_x_forwarded_for_is_ignored_unless_the_peer_is_a_trusted_proxy(
    hub_process: Any, tmp_path: Path
) -> None:
    # F6: uvicorn trusted X-Forwarded-For from 127.0.0.1, so a guesser there named a new address
    # in every request and was never throttled. A real `profilerhub hub`, no trusted proxies.
    env = {"PROFILERHUB_RATE_LIMIT_TOKEN_FAILURES": "2", "PROFILERHUB_RATE_LIMIT_WINDOW_SECONDS": "3600",
           "PROFILERHUB_HUB_WORKERS": "1"}  # fmt: skip
    database = f"sqlite:///{tmp_path}/hub.db"
    migrate(database, tmp_path)
    hub = hub_process("hub", database_url=database, env=env)
    with httpx.Client(base_url=hub.url, timeout=30) as guesser:  # from 127.0.0.1, to a hub of its own
        statuses = [
            guesser.get(
                "/api/v1/me", headers={**auth("phk_guess"), "x-forwarded-for": f"203.0.113.{i}"}
            ).status_code
            for i in range(3)
        ]
    assert statuses == [401, 401, 429]


def test_a_trusted_proxys_x_forwarded_for_names_the_client(hub_settings: Any, hub_app: Any) -> None:
    from fastapi.testclient import TestClient

    from profilerhub_hub.main import create_app

    settings = hub_settings.model_copy(
        update={
            "trusted_proxies": ["10.0.0.0/8"],
            "rate_limit_token_failures": 1,
            "rate_limit_window_seconds": 3600,
        }
    )
    app = create_app(settings, engine=hub_app.state.services.engine)
    with TestClient(app, client=("10.1.2.3", 40000)) as through_proxy:

        def guess(chain: str) -> int:
            return int(
                through_proxy.get(
                    "/api/v1/me", headers={**auth("phk_x"), "x-forwarded-for": chain}
                ).status_code
            )

        # the nearest untrusted hop is the client; what it claimed before that (a forged left part) is not
        assert [guess("198.51.100.7, 203.0.113.9"), guess("1.1.1.1, 203.0.113.9")] == [401, 429]
        assert guess("203.0.113.10, 10.9.9.9") == 401  # another client, behind two trusted proxies
    with TestClient(app, client=("192.0.2.50", 40000)) as direct:  # not a proxy: its XFF is ignored
        answers = [
            direct.get("/api/v1/me", headers={**auth("phk_x"), "x-forwarded-for": f"203.0.113.{i}"})
            for i in (20, 21)
        ]
        assert [a.status_code for a in answers] == [401, 429]


def test_refused_openings_of_an_app_are_audited(client: Any, seed: Any) -> None:
    # F9: the REST presigned URL and the proxy with a token refused administrators and other
    # users without a trace (CreatePresignedDomainUrl goes through the same authorize_resolved).
    alice = seed.user_token("d1", "alice")
    bob = seed.user_token("d1", "bob")
    made = client.post(
        "/api/v1/domains/d1/users/alice/apps", json={"app_type": "DetailedProfiler"}, headers=auth(alice)
    )
    assert made.status_code == 202, made.text
    app_id = made.json()["app_id"]
    url = "/api/v1/domains/d1/users/alice/apps/DetailedProfiler/default/presigned-url"
    assert client.post(url, headers=auth(seed.admin_token)).status_code == 403
    assert client.post(url, headers=auth(bob)).status_code == 404  # hidden from him, as if missing
    for _ in range(3):  # a page's assets, one attempt
        assert client.get(f"/apps/{app_id}/", headers=auth(bob)).status_code == 404
    events = client.get("/api/v1/audit?action=OpenApp&outcome=denied", headers=auth(seed.admin_token)).json()
    seen = sorted((e["actor"], e["detail"].get("via", "rest")) for e in events["items"])
    assert seen == [("d1/bob", "proxy"), ("d1/bob", "rest"), ("system/admin", "rest")], events
