"""Findings of the issue-24 audit that are about one request each (F5, F6, F8): in process."""

from __future__ import annotations

from typing import Any

import pytest

from tests.support.hub import auth


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
