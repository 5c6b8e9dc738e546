"""Access keys for boto3: issued, listed, revoked and audited through the REST API."""

from __future__ import annotations

from typing import Any

from profilerhub_core.db.models import AuditEvent
from profilerhub_core.records import access_keys
from tests.support.hub import auth

KEYS = "/api/v1/domains/{domain}/users/{user}/access-keys"


def test_an_access_key_is_shown_once_listed_without_its_secret_and_revoked(client: Any, seed: Any) -> None:
    alice = seed.user_token("d1", "alice")
    made = client.post(KEYS.format(domain="d1", user="alice"), json={"note": "laptop"}, headers=auth(alice))
    assert made.status_code == 201, made.text
    body = made.json()
    assert access_keys.ACCESS_KEY_ID.fullmatch(body["access_key_id"]) and len(body["secret_access_key"]) == 40
    listed = client.get(KEYS.format(domain="d1", user="alice"), headers=auth(alice)).json()["items"]
    assert [(k["access_key_id"], k["status"]) for k in listed] == [(body["access_key_id"], "active")]
    assert "secret_access_key" not in listed[0] and body["secret_access_key"] not in str(listed)

    gone = client.delete(
        KEYS.format(domain="d1", user="alice") + f"/{body['access_key_id']}", headers=auth(alice)
    )
    assert gone.status_code == 204
    listed = client.get(KEYS.format(domain="d1", user="alice"), headers=auth(alice)).json()["items"]
    assert [k["status"] for k in listed] == ["revoked"]
    with seed.session() as session:
        events = [
            (e.action, e.outcome) for e in session.query(AuditEvent).filter(AuditEvent.actor == "d1/alice")
        ]
    assert ("CreateToken", "success") in events and ("DeleteToken", "success") in events


def test_the_database_holds_no_secret_of_an_access_key(client: Any, seed: Any) -> None:
    from profilerhub_core.db.models import ApiToken

    made = client.post(
        KEYS.format(domain="d1", user="alice"), headers=auth(seed.user_token("d1", "alice"))
    ).json()
    with seed.session() as session:
        row = session.query(ApiToken).filter(ApiToken.prefix == made["access_key_id"]).one()
        stored = " ".join(str(getattr(row, c.key)) for c in ApiToken.__table__.columns)
    assert made["secret_access_key"] not in stored


def test_a_user_cannot_issue_keys_for_another_user_nor_wider_than_their_token(client: Any, seed: Any) -> None:
    seed.user("d1", "alice")
    bob = seed.user_token("d1", "bob")
    other = client.post(KEYS.format(domain="d1", user="alice"), headers=auth(bob))
    assert other.status_code == 404 and other.json()["error"]["code"] == "ResourceNotFound"
    narrow = seed.token("d1", "bob", scopes=["CreateToken", "ListApps"])
    wider = client.post(KEYS.format(domain="d1", user="bob"), json={"scopes": ["*"]}, headers=auth(narrow))
    assert wider.status_code == 403
    same = client.post(KEYS.format(domain="d1", user="bob"), headers=auth(narrow))
    assert same.status_code == 201 and same.json()["scopes"] == ["CreateToken", "ListApps"]
    unknown = client.delete(KEYS.format(domain="d1", user="bob") + "/PHAKNOTAKEY", headers=auth(bob))
    assert unknown.status_code == 404
