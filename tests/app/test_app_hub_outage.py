"""The app's hub client logs the hub not answering as one outage: a line when it starts, one when
it ends with the count of failed calls (``profilerhub_core.outage``), not a line per request."""

from __future__ import annotations

import logging

import httpx
import pytest

from profilerhub_core.errors import Unavailable


def test_a_hub_that_stops_answering_is_two_lines_in_the_apps_log(caplog: pytest.LogCaptureFixture) -> None:
    from profilerhub_app.hub import HttpHub

    down = True

    def answer(request: httpx.Request) -> httpx.Response:
        if down:
            raise httpx.ConnectError("connection refused", request=request)
        return httpx.Response(200, json={"domain_id": "d", "user_id": "u", "items": []})

    hub = HttpHub("http://hub.invalid", "app-1", client=httpx.Client(transport=httpx.MockTransport(answer)))
    with caplog.at_level(logging.WARNING, logger="profilerhub.outage"):
        for _ in range(3):
            with pytest.raises(Unavailable, match="did not answer"):
                hub.owner_jobs("token")
        down = False
        for _ in range(2):
            assert hub.owner_jobs("token")["items"] == []
    lines = [r.getMessage() for r in caplog.records if r.name == "profilerhub.outage"]
    assert len(lines) == 2, lines
    assert "hub unreachable (ConnectError: connection refused)" in lines[0]
    assert "hub answers again after" in lines[1] and lines[1].endswith("(3 failed calls)")
