"""SageMaker's portal pattern over REST: an administrator's own credential asks for a user's app
URL (``POST …/apps/{type}/{name}/presigned-url``). Where the user's domain allows impersonation it
works, audited as impersonation, and the app session it starts names the administrator; where not,
the refusal names the setting that would allow it. (The SageMaker door's
``CreatePresignedDomainUrl``: tests/hub/test_hub_sagemaker_api.py.)
"""

from __future__ import annotations

from typing import Any

from profilerhub_core.db.models import AppType
from profilerhub_core.records import apps, domains, users
from tests.support.hub import auth

APP = "/api/v1/domains/d1/users/alice/apps/DetailedProfiler/default/presigned-url"


def test_an_administrator_opens_a_users_app_only_where_the_domain_allows_impersonation(
    client: Any, seed: Any
) -> None:
    alice = seed.user_token("d1", "alice")
    boss = seed.user_token("d1", "boss", role="admin")
    with seed.session() as session:
        domain = domains.require_domain(session, "d1")
        apps.create_user_app(
            session, domain, users.get_user(session, domain, "alice"), AppType.DetailedProfiler, "default"
        )
        session.commit()
    for admin in (seed.admin_token, boss):
        refused = client.post(APP, headers=auth(admin))
        assert refused.status_code == 403 and "allow_impersonation" in refused.json()["error"]["message"]
    assert client.post(APP, headers=auth(alice)).status_code == 200  # hers, always

    on = {"settings": {"allow_impersonation": True}}
    assert client.patch("/api/v1/domains/d1", json=on, headers=auth(seed.admin_token)).status_code == 200
    for admin in (seed.admin_token, boss):
        assert client.post(APP, headers=auth(admin)).status_code == 200
    assert client.post(APP, headers=auth(alice)).status_code == 200  # her own: no impersonation row
    events = client.get(
        "/api/v1/audit?action=OpenApp&outcome=success", headers=auth(seed.admin_token)
    ).json()["items"]
    assert [(e["actor"], e["detail"]["impersonation"], e["detail"]["as"]) for e in events] == [
        ("d1/boss", True, "d1/alice"),
        ("system/admin", True, "d1/alice"),
    ]
