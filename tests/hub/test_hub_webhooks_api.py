"""Webhooks through the hub's API: a user's, one job's and the domain's; the delivery log; the
allow-list refusing internal addresses with a clear 400 (by address, not by name); and a job's
stop request answered on every upload (``X-ProfilerHub-Stop``) and shown on the job."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import sqlalchemy as sa

from profilerhub_core.db.models import Job, WebhookDelivery
from profilerhub_core.records import webhooks
from tests.support.hub import auth

D1 = "/api/v1/domains/d1"
ALICE = f"{D1}/users/alice"
PUBLIC = "https://93.184.215.14/hook"  # an IP literal: public, and checked without DNS


@pytest.fixture
def loopback_client(hub_settings: Any, hub_app: Any) -> Iterator[Any]:
    """A hub whose operator allow-listed loopback (as the tests' receivers listen there)."""
    from fastapi.testclient import TestClient

    from profilerhub_hub.main import create_app

    app = create_app(hub_settings.model_copy(update={"webhook_allowed_networks": ["127.0.0.0/8"]}))
    with TestClient(app) as test_client:
        yield test_client
    app.state.services.engine.dispose()


def test_a_user_manages_webhooks_and_reads_their_delivery_log(client: Any, seed: Any) -> None:
    token = seed.user_token("d1", "alice")
    job = client.post(f"{ALICE}/jobs", json={"name": "run"}, headers=auth(token)).json()
    made = client.post(f"{ALICE}/webhooks", json={"url": PUBLIC, "note": "team"}, headers=auth(token))
    assert made.status_code == 201, made.text
    hook = made.json()
    assert hook["secret"].startswith("whsec_") and hook["scope"] == "user"
    assert hook["events"] == ["rule.IssuesFound", "job.Ready", "job.Failed"]
    one_job = client.post(
        f"{ALICE}/webhooks", json={"url": PUBLIC, "job_id": job["job_id"], "events": ["job.Ready"]},
        headers=auth(token),
    )  # fmt: skip
    assert one_job.status_code == 201 and one_job.json()["scope"] == "job"

    listed = client.get(f"{ALICE}/webhooks", headers=auth(token)).json()["items"]
    assert {h["webhook_id"] for h in listed} == {hook["webhook_id"], one_job.json()["webhook_id"]}
    assert all("secret" not in h for h in listed)  # shown once
    read = client.get(f"{ALICE}/webhooks/{hook['webhook_id']}", headers=auth(token)).json()
    assert read["url"] == PUBLIC and read["note"] == "team" and read["created_by"] == "d1/alice"

    with seed.session() as session:
        row = session.get(Job, job["job_id"])
        ids = webhooks.add_deliveries(session, row, "rule.IssuesFound", {"event": "rule.IssuesFound"})
        session.commit()
    assert len(ids) == 1  # the job's own webhook takes job.Ready only
    log = client.get(f"{ALICE}/webhooks/{hook['webhook_id']}/deliveries", headers=auth(token)).json()
    assert [(d["delivery_id"], d["status"], d["attempts"]) for d in log["items"]] == [(ids[0], "Pending", [])]

    gone = client.delete(f"{ALICE}/webhooks/{hook['webhook_id']}", headers=auth(token))
    assert gone.status_code == 204
    assert client.get(f"{ALICE}/webhooks/{hook['webhook_id']}", headers=auth(token)).status_code == 404
    with seed.session() as session:
        assert session.scalar(sa.select(sa.func.count()).select_from(WebhookDelivery)) == 0


def test_domain_webhooks_are_for_its_administrators(client: Any, seed: Any) -> None:
    user, admin = seed.user_token("d1", "alice"), seed.user_token("d1", "boss", role="admin")
    refused = client.post(f"{D1}/webhooks", json={"url": PUBLIC}, headers=auth(user))
    assert refused.status_code == 403
    made = client.post(f"{D1}/webhooks", json={"url": PUBLIC}, headers=auth(admin))
    assert made.status_code == 201 and made.json()["scope"] == "domain" and made.json()["user"] is None
    assert [h["scope"] for h in client.get(f"{D1}/webhooks", headers=auth(admin)).json()["items"]] == [
        "domain"
    ]
    job_at_domain = client.post(f"{D1}/webhooks", json={"url": PUBLIC, "job_id": "x"}, headers=auth(admin))
    assert (
        job_at_domain.status_code == 400
        and "users/{user}/webhooks" in job_at_domain.json()["error"]["message"]
    )


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:8080/hook",
        "http://localhost/hook",  # a name: what it resolves to is checked
        "http://169.254.169.254/latest/meta-data/",  # the cloud metadata service
        "http://10.1.2.3/hook",
        "http://192.168.0.10/hook",
        "http://[::1]/hook",
        "http://[::ffff:127.0.0.1]/hook",
        "http://0.0.0.0/hook",
        # F4: IPv6 forms embedding an IPv4 address, which is_global alone calls public
        "http://[::7f00:1]/hook",  # IPv4-compatible ::127.0.0.1
        "http://[::ffff:0:7f00:1]/hook",  # IPv4-translated
        "http://[64:ff9b::7f00:1]/hook",  # NAT64
        "http://[64:ff9b:1::a9fe:a9fe]/hook",  # local-use NAT64, 169.254.169.254
        "http://[2002:7f00:1::1]/hook",  # 6to4 of 127.0.0.1
        "http://[2002:a9fe:a9fe::1]/hook",  # 6to4 of the metadata service
        "http://[::a9fe:a9fe]/hook",  # IPv4-compatible 169.254.169.254
        "http://[2001:0:4136:e378:8000:63bf:f5ff:fffe]/hook",  # Teredo, client 10.0.0.1
    ],
)
def test_internal_addresses_are_refused_with_a_clear_400(client: Any, seed: Any, url: str) -> None:
    token = seed.user_token("d1", "alice")
    answer = client.post(f"{ALICE}/webhooks", json={"url": url}, headers=auth(token))
    assert answer.status_code == 400, answer.text
    error = answer.json()["error"]
    assert error["code"] == "ValidationError" and "not a public address" in error["message"]
    assert "PROFILERHUB_WEBHOOK_ALLOWED_NETWORKS" in error["message"]
    assert client.get(f"{ALICE}/webhooks", headers=auth(token)).json()["items"] == []


@pytest.mark.parametrize(
    ("url", "says"),
    [
        ("ftp://93.184.215.14/x", "https://"),
        ("https://user:pw@93.184.215.14/x", "user name or password"),
        ("https://93.184.215.14:99999/x", "not valid"),
        ("https:///x", "no host"),
        ("https://no-such-host.invalid/x", "does not resolve"),
    ],
)
def test_malformed_or_unresolvable_urls_are_refused(client: Any, seed: Any, url: str, says: str) -> None:
    answer = client.post(f"{ALICE}/webhooks", json={"url": url}, headers=auth(seed.user_token("d1", "alice")))
    assert answer.status_code == 400 and says in answer.json()["error"]["message"], answer.text


def test_an_allow_listed_network_is_accepted(loopback_client: Any, seed: Any) -> None:
    token = seed.user_token("d1", "alice")
    answer = loopback_client.post(
        f"{ALICE}/webhooks", json={"url": "http://127.0.0.1:9/x"}, headers=auth(token)
    )
    assert answer.status_code == 201, answer.text
    still = loopback_client.post(f"{ALICE}/webhooks", json={"url": "http://10.0.0.1/x"}, headers=auth(token))
    assert still.status_code == 400


def test_another_users_job_cannot_be_watched(client: Any, seed: Any) -> None:
    alice, bob = seed.user_token("d1", "alice"), seed.user_token("d1", "bob")
    job = client.post(f"{ALICE}/jobs", json={"name": "run"}, headers=auth(alice)).json()
    answer = client.post(
        f"{D1}/users/bob/webhooks", json={"url": PUBLIC, "job_id": job["job_id"]}, headers=auth(bob)
    )
    assert answer.status_code == 404


def test_a_stop_request_is_answered_on_every_upload_and_shown_on_the_job(
    jobs_client: Any, jobs_seed: Any
) -> None:
    token = jobs_seed.user_token("d1", "alice")
    bad = jobs_client.post(
        f"{ALICE}/jobs", json={"name": "run", "stop_on": ["NoSuchRule"]}, headers=auth(token)
    )
    assert bad.status_code == 422 and "NoSuchRule" in bad.json()["error"]["message"]
    job = jobs_client.post(
        f"{ALICE}/jobs", json={"name": "run", "stop_on": ["Dataloader"]}, headers=auth(token)
    ).json()
    assert job["stop_on"] == ["Dataloader"] and job["stop_request"] is None
    files = f"{ALICE}/jobs/{job['job_id']}/files"
    assert (
        "x-profilerhub-stop"
        not in jobs_client.put(f"{files}/a.json", content=b"{}", headers=auth(token)).headers
    )
    with jobs_seed.session() as session:
        session.execute(sa.update(Job).values(stop_request={"rule": "Dataloader", "reason": "a stall"}))
        session.commit()
    answer = jobs_client.put(f"{files}/b.json", content=b"{}", headers=auth(token))
    assert answer.status_code == 201 and answer.headers["X-ProfilerHub-Stop"] == "Dataloader"
    read = jobs_client.get(f"{ALICE}/jobs/{job['job_id']}", headers=auth(token)).json()
    assert read["stop_request"]["rule"] == "Dataloader"
