"""The one HTTP client of the hub's API: the SDK's HubClient, the CLI's Hub and the app's HttpHub
send the same user agent, read the hub's errors alike and retry by the same policy.

Each client is pointed at the same misbehaving hub (an ``httpx.MockTransport``): no network, real
``httpx`` clients, the production classes.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from profilerhub import __version__
from profilerhub.cli.hubapi import CliFailure, Hub
from profilerhub.cli.hubconfig import HubConfig
from profilerhub.hubclient import HubClient, HubError
from profilerhub.hubhttp import RETRY, HubHTTP, HubUnreachable, RetryPolicy, error_of
from profilerhub_app.hub import HUB, HttpHub
from profilerhub_core.errors import Unavailable

URL = "http://hub.test"
OWNER_JOBS = {"domain_id": "d", "user_id": "u", "items": []}


class Script:
    """A hub answering each request with the next of ``answers`` (the last one repeats)."""

    def __init__(self, *answers: Callable[[httpx.Request], httpx.Response] | httpx.Response) -> None:
        self.answers = list(answers)
        self.seen: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.seen.append(request)
        answer = self.answers[min(len(self.seen), len(self.answers)) - 1]
        return answer(request) if callable(answer) else answer


def refused(request: httpx.Request) -> httpx.Response:
    raise httpx.ConnectError("connection refused", request=request)


def _sdk(script: Script) -> Callable[[], Any]:
    client = HubClient(URL, "tok", transport=httpx.MockTransport(script))
    return client.me


def _cli(script: Script) -> Callable[[], Any]:
    config = HubConfig(url=URL, token="tok", url_from="test", token_from="test")
    http = httpx.Client(base_url=URL, transport=httpx.MockTransport(script))
    hub = Hub(config, http=http)
    return hub.me


def _app(script: Script) -> Callable[[], Any]:
    hub = HttpHub(URL, "app-1", client=httpx.Client(transport=httpx.MockTransport(script)))
    return lambda: hub.owner_jobs("tok")


CLIENTS = {"sdk": _sdk, "cli": _cli, "app": _app}
FAILS = {"sdk": HubError, "cli": CliFailure, "app": Unavailable}


@pytest.mark.parametrize("component", CLIENTS)
def test_every_client_names_itself_with_the_one_user_agent_and_sends_the_token(component: str) -> None:
    script = Script(httpx.Response(200, json=OWNER_JOBS | {"user": "u", "domain": "d", "role": "user"}))
    CLIENTS[component](script)()
    (request,) = script.seen
    assert request.headers["user-agent"].startswith(f"profilerhub/{__version__} ({component}; python ")
    assert request.headers["authorization"] == "Bearer tok"


@pytest.mark.parametrize("component", CLIENTS)
def test_every_client_tries_a_get_again_after_a_503_and_a_refused_connection(component: str) -> None:
    ok = httpx.Response(200, json=OWNER_JOBS | {"user": "u", "domain": "d", "role": "user"})
    script = Script(
        httpx.Response(503, json={"error": {"code": "Unavailable", "message": "busy"}}), refused, ok
    )
    assert CLIENTS[component](script)() is not None
    assert len(script.seen) == RETRY.attempts == 3


@pytest.mark.parametrize("component", CLIENTS)
def test_every_client_gives_up_after_the_policys_tries_with_its_own_error(component: str) -> None:
    script = Script(refused)
    with pytest.raises(FAILS[component]):
        CLIENTS[component](script)()
    assert len(script.seen) == RETRY.attempts
    if component == "app":  # the app's view of the hub (an outage it logs once) is the process's
        HUB.recovered()


def test_a_post_the_hub_may_have_received_is_not_repeated_but_one_never_sent_is() -> None:
    busy = httpx.Response(503, json={"error": {"code": "Unavailable", "message": "busy"}})
    script = Script(busy, httpx.Response(201, json={}))
    http = HubHTTP(URL, component="sdk", transport=httpx.MockTransport(script), sleep=lambda _: None)
    assert http.send("POST", "/api/v1/x").status_code == 503 and len(script.seen) == 1
    script = Script(refused, httpx.Response(201, json={}))
    http = HubHTTP(URL, component="sdk", transport=httpx.MockTransport(script), sleep=lambda _: None)
    assert http.send("POST", "/api/v1/x").status_code == 201 and len(script.seen) == 2


def test_the_hubs_error_reads_alike_in_every_client() -> None:
    error = {"error": {"code": "ValidationError", "message": "limit must be at most 1000"}}
    script = Script(httpx.Response(400, json=error))
    with pytest.raises(HubError) as sdk:
        _sdk(script)()
    with pytest.raises(CliFailure) as cli:
        _cli(script)()
    assert sdk.value.code == "ValidationError" and "limit must be at most 1000" in sdk.value.message
    assert cli.value.message == "limit must be at most 1000 (400 ValidationError)"
    assert error_of(httpx.Response(502, text="Bad Gateway")) == ("", "Bad Gateway")
    assert len(script.seen) == 2  # a 400 is not tried again


def test_retry_after_is_honoured_up_to_the_policys_longest_wait() -> None:
    waits: list[float] = []
    busy = httpx.Response(429, headers={"Retry-After": "1"}, json={})
    script = Script(busy, httpx.Response(429, headers={"Retry-After": "3600"}, json={}), httpx.Response(200))
    http = HubHTTP(URL, component="cli", transport=httpx.MockTransport(script), sleep=waits.append)
    assert http.send("GET", "/api/v1/me").status_code == 200
    assert waits == [1.0, RetryPolicy().max_delay]


def test_an_unreachable_hub_says_where_and_why() -> None:
    http = HubHTTP(URL, component="sdk", transport=httpx.MockTransport(refused), sleep=lambda _: None)
    with pytest.raises(
        HubUnreachable, match=r"cannot reach http://hub.test \(ConnectError: connection refused\)"
    ):
        http.send("GET", "/api/v1/me")


def test_importing_the_shared_client_pulls_in_nothing_heavy() -> None:
    code = "import json, sys; import profilerhub.hubhttp; print(json.dumps(sorted(sys.modules)))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    loaded = {m.split(".")[0] for m in json.loads(done.stdout)}
    assert not loaded & {"httpx", "typer", "rich", "profilerhub_core", "profilerhub_app"}, loaded


def test_the_uploader_waits_by_the_same_policy_patiently_and_starts_over_after_a_success(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The background uploader keeps no backoff of its own: ``RETRY.delay(n, patient=True)``."""
    from profilerhub import _uploader
    from profilerhub.sinks.base import Sink, SinkError

    asked: list[tuple[int, bool]] = []

    class Recorded(RetryPolicy):
        def delay(self, attempt: int, retry_after: str | None = None, *, patient: bool = False) -> float:
            asked.append((attempt, patient))
            return 0.0

    class Flaky(Sink):
        kind = "flaky"
        failures = {"a": 2, "b": 1}
        stored: list[str] = []

        def open(self) -> None: ...

        def put(self, path: str, data: bytes) -> None:
            if self.failures.get(path, 0):
                self.failures[path] -= 1
                raise SinkError("storage answered 503", retryable=True)
            self.stored.append(path)

        def complete(self, report: dict[str, object] | None = None) -> None: ...

        @property
        def location(self) -> str:
            return "flaky"

    monkeypatch.setattr(_uploader, "RETRY", Recorded())
    sink = Flaky()
    uploader = _uploader.Uploader(sink)
    uploader.start()
    assert uploader.submit("a", b"1") and uploader.submit("b", b"2")
    uploader.close(timeout=10)
    assert sink.stored == ["a", "b"]
    assert asked == [(1, True), (2, True), (1, True)]  # b's first failure waits the first delay again
    policy = RetryPolicy()
    patient = [policy.delay(9, patient=True) for _ in range(20)]  # 5 s with jitter: 2.5-5 s
    assert policy.max_delay < min(patient) and max(patient) <= policy.patient_max_delay
    assert max(policy.delay(9) for _ in range(20)) <= policy.max_delay
