"""Every route x every kind of caller, with the status each must get.

The targets are domain ``d1`` and its user ``alice``. Callers:

    platform   the platform admin (system/admin)
    dadmin     a domain admin of d1
    oadmin     a domain admin of another domain (d2)
    user       alice herself
    other      bob, another user of d1
    revoked    alice's revoked token
    expired    alice's expired token
    none       no Authorization header

404 where the caller may not even know the target exists (another domain, another user).
Each cell starts from the same data (reseeded after every request that changed something), on
SQLite and PostgreSQL.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
import sqlalchemy as sa

from profilerhub_core.db.models import ApiToken, Job, utcnow
from profilerhub_core.records import domains, jobs, users
from tests.support.hub import auth

CALLERS = ("platform", "dadmin", "oadmin", "user", "other", "revoked", "expired", "none")
U = "/api/v1/domains/d1/users/alice"

# (method, path, json body, status for each caller in CALLERS order)
PATCH_D1 = {"settings": {"idle_minutes": 5}}
# fmt: off
MATRIX: list[tuple[str, str, dict[str, Any] | None, tuple[int, ...]]] = [
    ("POST",  "/api/v1/domains",                 {"name": "d9"},    (201, 403, 403, 403, 403, 401, 401, 401)),
    ("GET",   "/api/v1/domains",                 None,              (200, 200, 200, 200, 200, 401, 401, 401)),
    ("GET",   "/api/v1/domains/d1",              None,              (200, 200, 404, 200, 200, 401, 401, 401)),
    ("GET",   "/api/v1/domains/nope",            None,              (404, 404, 404, 404, 404, 401, 401, 401)),
    ("PATCH", "/api/v1/domains/d1",              PATCH_D1,          (200, 403, 404, 403, 403, 401, 401, 401)),
    ("DELETE","/api/v1/domains/d1",              None,              (409, 403, 404, 403, 403, 401, 401, 401)),
    ("DELETE","/api/v1/domains/d3",              None,              (204, 404, 404, 404, 404, 401, 401, 401)),
    ("POST",  "/api/v1/domains/d1/users",        {"name": "carol"}, (201, 201, 404, 403, 403, 401, 401, 401)),
    ("GET",   "/api/v1/domains/d1/users",        None,              (200, 200, 404, 403, 403, 401, 401, 401)),
    ("GET",   U,                                 None,              (200, 200, 404, 200, 404, 401, 401, 401)),
    ("GET",   "/api/v1/domains/d1/users/nobody", None,              (404, 404, 404, 404, 404, 401, 401, 401)),
    ("DELETE",U,                                 None,              (204, 204, 404, 403, 404, 401, 401, 401)),
    ("POST",  f"{U}/tokens",                     {"note": "x"},     (201, 201, 404, 201, 404, 401, 401, 401)),
    ("GET",   f"{U}/tokens",                     None,              (200, 200, 404, 200, 404, 401, 401, 401)),
    ("DELETE",f"{U}/tokens/{{spare}}",           None,              (204, 204, 404, 204, 404, 401, 401, 401)),
    ("DELETE",f"{U}/tokens/no-such-token",       None,              (404, 404, 404, 404, 404, 401, 401, 401)),
    ("GET",   f"{U}/jobs/{{job}}/rules",         None,              (200, 200, 404, 200, 404, 401, 401, 401)),
    ("GET",   f"{U}/jobs/no-such-job/rules",     None,              (404, 404, 404, 404, 404, 401, 401, 401)),
    ("GET",   "/api/v1/me",                      None,              (200, 200, 200, 200, 200, 401, 401, 401)),
    ("GET",   "/api/v1/audit",                   None,              (200, 200, 200, 403, 403, 401, 401, 401)),
    ("GET",   "/api/v1/healthz",                 None,              (200, 200, 200, 200, 200, 200, 200, 200)),
    ("GET",   "/api/v1/readyz",                  None,              (200, 200, 200, 200, 200, 200, 200, 200)),
]
# fmt: on

ROUTES = [pytest.param(*row, id=f"{row[0]} {row[1]}") for row in MATRIX]


def _tokens(seed: Any) -> dict[str, str | None]:
    seed.domain("d3")
    tokens: dict[str, str | None] = {
        "platform": seed.admin_token,
        "dadmin": seed.user_token("d1", "boss", role="admin"),
        "oadmin": seed.user_token("d2", "boss", role="admin"),
        "user": seed.user_token("d1", "alice"),
        "other": seed.user_token("d1", "bob"),
        "revoked": seed.token("d1", "alice", note="revoked"),
        "expired": seed.token("d1", "alice", note="expired", expires_in_seconds=3600),
        "none": None,
    }
    seed.token("d1", "alice", note="spare")
    with seed.session() as session:
        d1 = domains.require_domain(session, "d1")
        alice = users.get_user(session, d1, "alice")
        assert alice is not None
        jobs.create_job(session, d1, alice, "matrix")
        session.commit()
    with seed.session() as session:
        session.execute(sa.update(ApiToken).where(ApiToken.note == "revoked").values(revoked_at=utcnow()))
        expired_at = utcnow() - timedelta(seconds=1)
        session.execute(sa.update(ApiToken).where(ApiToken.note == "expired").values(expires_at=expired_at))
        session.commit()
    return tokens


def _spare_token_id(seed: Any) -> str:
    with seed.session() as session:
        return str(session.scalar(sa.select(ApiToken.id).where(ApiToken.note == "spare")))


def _job_id(seed: Any) -> str:
    with seed.session() as session:
        return str(session.scalar(sa.select(Job.id).where(Job.name == "matrix")))


def test_matrix_covers_every_caller_for_every_route() -> None:
    assert all(len(row[3]) == len(CALLERS) for row in MATRIX)


@pytest.mark.parametrize(("method", "path", "body", "expected"), ROUTES)
def test_permission_matrix(
    client: Any, seed: Any, method: str, path: str, body: dict[str, Any] | None, expected: tuple[int, ...]
) -> None:
    tokens = _tokens(seed)
    wrong = []
    for caller, status in zip(CALLERS, expected, strict=True):
        url = path.replace("{spare}", _spare_token_id(seed)).replace("{job}", _job_id(seed))
        token = tokens[caller]
        response = client.request(method, url, json=body, headers=auth(token) if token else {})
        if response.status_code != status:
            wrong.append(f"{caller}: expected {status}, got {response.status_code} {response.text}")
        elif status >= 400:
            assert set(response.json()["error"]) == {"code", "message"}
        if method != "GET" and response.status_code < 300:  # it changed something: start afresh
            _empty_and_reseed(seed, tokens)
    assert not wrong, "\n".join(wrong)


def _empty_and_reseed(seed: Any, tokens: dict[str, str | None]) -> None:
    seed.reset()
    tokens.update(_tokens(seed))
