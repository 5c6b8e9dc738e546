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
SQLite and PostgreSQL: besides the callers' tokens, alice has a Pending app ``default``
(``{app}``; so deleting alice is 409, and deleting it is 409 too), an open job (``{job}``), a
webhook (``{hook}``) and the domain has one (``{dhook}``);
uploads go through the hub (local storage), so asking for a presigned upload is 400.

Every operation of the OpenAPI document has at least one row (``test_matrix_has_a_row_for_every
_route``): a route added without one fails the suite.
"""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Any

import pytest
import sqlalchemy as sa

from profilerhub_core.db.models import ApiToken, App, AppType, Job, Webhook, utcnow
from profilerhub_core.records import apps, domains, jobs, users, webhooks
from tests.support.hub import auth

CALLERS = ("platform", "dadmin", "oadmin", "user", "other", "revoked", "expired", "none")
U = "/api/v1/domains/d1/users/alice"
APP = f"{U}/apps/DetailedProfiler/default"
JOB = f"{U}/jobs/{{job}}"
OWNER_JOB = "/api/v1/apps/{app}/owner/jobs/{job}"  # the app's own requests: an app token or 401

# (method, path, json body, status for each caller in CALLERS order)
PATCH_D1 = {"settings": {"idle_minutes": 5}}  # a domain admin may change this one...
PATCH_PLATFORM = {"settings": {"max_live_apps": 5}}  # ... not this one
NEW_APP = {"app_type": "DetailedProfiler", "app_name": "second"}
UPLOAD = {"path": "rank0.json", "size": 10}
SIGN_IN_LINK = {"landing": "app"}
HOOK = {"url": "https://93.184.215.14/hook"}  # a public IP literal: no DNS needed
PASSWORDS = {"current_password": "not-set-yet", "new_password": "a-long-new-secret-9"}
SIGN_IN = {"domain": "d1", "user": "alice", "password": "not-set-yet"}
TOTP_ON = {"enabled": True, "code": "000000"}  # nothing pending: 409
ACCEPT = {"invitation": "phi_no-such-invitation", "password": "a-long-new-secret-9"}
DHOOKS = "/api/v1/domains/d1/webhooks"
# fmt: off
MATRIX: list[tuple[str, str, dict[str, Any] | None, tuple[int, ...]]] = [
    ("POST",  "/api/v1/domains",                 {"name": "d9"},    (201, 403, 403, 403, 403, 401, 401, 401)),
    ("GET",   "/api/v1/domains",                 None,              (200, 200, 200, 200, 200, 401, 401, 401)),
    ("GET",   "/api/v1/domains/d1",              None,              (200, 200, 404, 200, 200, 401, 401, 401)),
    ("GET",   "/api/v1/domains/nope",            None,              (404, 404, 404, 404, 404, 401, 401, 401)),
    ("PATCH", "/api/v1/domains/d1",              PATCH_D1,          (200, 200, 404, 403, 403, 401, 401, 401)),
    ("PATCH", "/api/v1/domains/d1",              PATCH_PLATFORM,    (200, 403, 404, 403, 403, 401, 401, 401)),
    ("DELETE","/api/v1/domains/d1",              None,              (409, 403, 404, 403, 403, 401, 401, 401)),
    ("DELETE","/api/v1/domains/d3",              None,              (204, 404, 404, 404, 404, 401, 401, 401)),
    ("POST",  "/api/v1/domains/d1/users",        {"name": "carol"}, (201, 201, 404, 403, 403, 401, 401, 401)),
    ("GET",   "/api/v1/domains/d1/users",        None,              (200, 200, 404, 403, 403, 401, 401, 401)),
    ("GET",   U,                                 None,              (200, 200, 404, 200, 404, 401, 401, 401)),
    ("GET",   "/api/v1/domains/d1/users/nobody", None,              (404, 404, 404, 404, 404, 401, 401, 401)),
    ("DELETE",U,                                 None,              (409, 409, 404, 403, 404, 401, 401, 401)),
    ("DELETE","/api/v1/domains/d1/users/bob",    None,              (204, 204, 404, 404, 403, 401, 401, 401)),
    ("POST",  f"{U}/tokens",                     {"note": "x"},     (201, 201, 404, 201, 404, 401, 401, 401)),
    ("GET",   f"{U}/tokens",                     None,              (200, 200, 404, 200, 404, 401, 401, 401)),
    ("DELETE",f"{U}/tokens/{{spare}}",           None,              (204, 204, 404, 204, 404, 401, 401, 401)),
    ("DELETE",f"{U}/tokens/no-such-token",       None,              (404, 404, 404, 404, 404, 401, 401, 401)),
    ("DELETE",f"{U}/tokens",                     None,              (204, 204, 404, 204, 404, 401, 401, 401)),
    ("POST",  f"{U}/presigned-url",              SIGN_IN_LINK,      (200, 200, 404, 200, 404, 401, 401, 401)),
    ("POST",  f"{U}/invitations",                {},                (201, 201, 404, 403, 404, 401, 401, 401)),
    ("GET",   f"{U}/invitations",                None,              (200, 200, 404, 403, 404, 401, 401, 401)),
    ("DELETE",f"{U}/invitations/no-such-one",    None,              (404, 404, 404, 403, 404, 401, 401, 401)),
    ("PUT",   f"{U}/password",                   PASSWORDS,         (403, 403, 404, 403, 404, 401, 401, 401)),
    ("GET",   f"{U}/two-factor",                 None,              (403, 403, 404, 200, 404, 401, 401, 401)),
    ("POST",  f"{U}/two-factor",                 {},                (403, 403, 404, 201, 404, 401, 401, 401)),
    ("PUT",   f"{U}/two-factor",                 TOTP_ON,           (403, 403, 404, 409, 404, 401, 401, 401)),
    ("POST",  "/api/v1/sign-in/password",        SIGN_IN,           (401, 401, 401, 401, 401, 401, 401, 401)),
    ("POST",  "/api/v1/sign-in/invitation",      ACCEPT,            (401, 401, 401, 401, 401, 401, 401, 401)),
    ("POST",  f"{U}/access-keys",                {"note": "x"},     (201, 201, 404, 201, 404, 401, 401, 401)),
    ("GET",   f"{U}/access-keys",                None,              (200, 200, 404, 200, 404, 401, 401, 401)),
    ("DELETE",f"{U}/access-keys/PHAKAAAAAAAAAAAA", None,            (404, 404, 404, 404, 404, 401, 401, 401)),
    ("GET",   "/api/v1/me",                      None,              (200, 200, 200, 200, 200, 401, 401, 401)),
    ("GET",   "/api/v1/audit",                   None,              (200, 200, 200, 403, 403, 401, 401, 401)),
    ("GET",   "/api/v1/healthz",                 None,              (200, 200, 200, 200, 200, 200, 200, 200)),
    ("GET",   "/api/v1/readyz",                  None,              (200, 200, 200, 200, 200, 200, 200, 200)),
    ("POST",  f"{U}/apps",                       NEW_APP,           (202, 202, 404, 202, 404, 401, 401, 401)),
    ("GET",   f"{U}/apps",                       None,              (200, 200, 404, 200, 404, 401, 401, 401)),
    ("GET",   APP,                               None,              (200, 200, 404, 200, 404, 401, 401, 401)),
    ("GET",   f"{U}/apps/DetailedProfiler/nope", None,              (404, 404, 404, 404, 404, 401, 401, 401)),
    ("DELETE",APP,                               None,              (409, 409, 404, 409, 404, 401, 401, 401)),
    ("POST",  f"{APP}/presigned-url",            None,              (403, 403, 404, 200, 404, 401, 401, 401)),
    ("GET",   "/api/v1/apps",                    None,              (200, 200, 200, 403, 403, 401, 401, 401)),
    ("GET",   "/api/v1/apps/{app}/owner/jobs",   None,              (401, 401, 401, 401, 401, 401, 401, 401)),
    ("GET",   f"{OWNER_JOB}/logs",               None,              (401, 401, 401, 401, 401, 401, 401, 401)),
    ("POST",  f"{OWNER_JOB}/stop",               None,              (401, 401, 401, 401, 401, 401, 401, 401)),
    ("POST",  f"{OWNER_JOB}/captures",           {"steps": 2},      (401, 401, 401, 401, 401, 401, 401, 401)),
    ("POST",  f"{U}/jobs",                       {"name": "run"},   (201, 201, 404, 201, 404, 401, 401, 401)),
    ("GET",   f"{U}/jobs",                       None,              (200, 200, 404, 200, 404, 401, 401, 401)),
    ("GET",   JOB,                               None,              (200, 200, 404, 200, 404, 401, 401, 401)),
    ("GET",   f"{JOB}/rules",                    None,              (200, 200, 404, 200, 404, 401, 401, 401)),
    ("GET",   f"{U}/jobs/no-such-job/rules",     None,              (404, 404, 404, 404, 404, 401, 401, 401)),
    ("GET",   f"{JOB}/report",                   None,              (409, 409, 404, 409, 404, 401, 401, 401)),
    ("GET",   f"{JOB}/metrics",                  None,              (200, 200, 404, 200, 404, 401, 401, 401)),
    ("GET",   f"{JOB}/tensors",                  None,              (200, 200, 404, 200, 404, 401, 401, 401)),
    ("GET",   f"{JOB}/tensors/full",             None,              (200, 200, 404, 200, 404, 401, 401, 401)),
    ("GET",   f"{JOB}/tensors/full/x.npy",       None,              (404, 404, 404, 404, 404, 401, 401, 401)),
    ("GET",   f"{JOB}/tensors/losses/loss",      None,              (404, 404, 404, 404, 404, 401, 401, 401)),
    ("GET",   f"{U}/jobs/no-such-job",           None,              (404, 404, 404, 404, 404, 401, 401, 401)),
    ("PUT",   f"{JOB}/files/rank0.json",         {"x": 1},          (201, 201, 404, 201, 404, 401, 401, 401)),
    ("POST",  f"{JOB}/uploads",                  UPLOAD,            (400, 400, 404, 400, 404, 401, 401, 401)),
    ("GET",   f"{JOB}/logs",                     None,              (200, 200, 404, 200, 404, 401, 401, 401)),
    ("POST",  f"{JOB}/captures",                 {"steps": 2},      (409, 409, 404, 409, 404, 401, 401, 401)),
    ("POST",  f"{JOB}/stop",                     None,              (202, 202, 404, 202, 404, 401, 401, 401)),
    ("POST",  f"{JOB}/complete",                 None,              (202, 202, 404, 202, 404, 401, 401, 401)),
    ("DELETE",JOB,                               None,              (204, 204, 404, 204, 404, 401, 401, 401)),
    ("POST",  DHOOKS,                            HOOK,              (201, 201, 404, 403, 403, 401, 401, 401)),
    ("GET",   DHOOKS,                            None,              (200, 200, 404, 403, 403, 401, 401, 401)),
    ("GET",   f"{DHOOKS}/{{dhook}}",             None,              (200, 200, 404, 403, 403, 401, 401, 401)),
    ("GET",   f"{DHOOKS}/{{dhook}}/deliveries",  None,              (200, 200, 404, 403, 403, 401, 401, 401)),
    ("DELETE",f"{DHOOKS}/{{dhook}}",             None,              (204, 204, 404, 403, 403, 401, 401, 401)),
    ("POST",  f"{U}/webhooks",                   HOOK,              (201, 201, 404, 201, 404, 401, 401, 401)),
    ("GET",   f"{U}/webhooks",                   None,              (200, 200, 404, 200, 404, 401, 401, 401)),
    ("GET",   f"{U}/webhooks/{{hook}}",          None,              (200, 200, 404, 200, 404, 401, 401, 401)),
    ("GET",   f"{U}/webhooks/no-such-hook",      None,              (404, 404, 404, 404, 404, 401, 401, 401)),
    ("GET",   f"{U}/webhooks/{{hook}}/deliveries", None,            (200, 200, 404, 200, 404, 401, 401, 401)),
    ("DELETE",f"{U}/webhooks/{{hook}}",          None,              (204, 204, 404, 204, 404, 401, 401, 401)),
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
    _alices_app_and_job(seed)
    with seed.session() as session:
        session.execute(sa.update(ApiToken).where(ApiToken.note == "revoked").values(revoked_at=utcnow()))
        expired_at = utcnow() - timedelta(seconds=1)
        session.execute(sa.update(ApiToken).where(ApiToken.note == "expired").values(expires_at=expired_at))
        session.commit()
    return tokens


def _alices_app_and_job(seed: Any) -> None:
    with seed.session() as session:
        domain = domains.require_domain(session, "d1")
        alice = users.get_user(session, domain, "alice")
        apps.create_user_app(session, domain, alice, AppType.DetailedProfiler, "default")
        jobs.create_job(session, domain, alice, "first", [])
        for owner, note in ((alice, "alice's"), (None, "the domain's")):
            webhooks.create_webhook(
                session, domain, owner, url=HOOK["url"], events=webhooks.EVENTS, created_by="test",
                allowed_networks=(), note=note,
            )  # fmt: skip
        session.commit()


def _concrete(path: str, seed: Any) -> str:
    """``path`` with ``{spare}``, ``{app}`` and ``{job}`` replaced by this data's ids."""
    with seed.session() as session:
        ids = {
            "{spare}": session.scalar(sa.select(ApiToken.id).where(ApiToken.note == "spare")),
            "{app}": session.scalar(sa.select(App.id).where(App.app_name == "default")),
            "{job}": session.scalar(sa.select(Job.id).where(Job.name == "first")),
            "{hook}": session.scalar(sa.select(Webhook.id).where(Webhook.note == "alice's")),
            "{dhook}": session.scalar(sa.select(Webhook.id).where(Webhook.note == "the domain's")),
        }
    for placeholder, value in ids.items():
        path = path.replace(placeholder, str(value))
    return path


def test_matrix_covers_every_caller_for_every_route() -> None:
    assert all(len(row[3]) == len(CALLERS) for row in MATRIX)


def _operations(app: Any) -> set[tuple[str, str]]:
    return {(m.upper(), path) for path, ops in app.openapi()["paths"].items() for m in ops}


def _rows_of(method: str, template: str) -> list[str]:
    pattern = re.compile("^" + re.sub(r"\{[^}]+\}", "[^/]+", template) + "$")
    return [path for m, path, _, _ in MATRIX if m == method and pattern.match(path)]


def test_matrix_has_a_row_for_every_route(hub_app: Any) -> None:
    missing = sorted(f"{m} {p}" for m, p in _operations(hub_app) if not _rows_of(m, p))
    assert missing == [], "routes without a row in MATRIX (add one per route): " + ", ".join(missing)
    assert len(_operations(hub_app)) >= 30  # the check itself sees the routes


@pytest.mark.parametrize(("method", "path", "body", "expected"), ROUTES)
def test_permission_matrix(
    client: Any, seed: Any, method: str, path: str, body: dict[str, Any] | None, expected: tuple[int, ...]
) -> None:
    tokens = _tokens(seed)
    wrong = []
    for caller, status in zip(CALLERS, expected, strict=True):
        url = _concrete(path, seed)
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


# --------------------------------------------------------------------------- the terminal commands

# (command line, the MATRIX row it calls): each caller gets exit 0 where the route answers 2xx,
# 1 where it refuses, with the hint that fits the refusal. The CLI talks to the in-process hub
# through its test seam (``ctx.obj["http"]``).
CLI_ROWS: list[tuple[tuple[str, ...], tuple[str, str]]] = [
    (("domains", "list"),                                    ("GET", "/api/v1/domains")),
    (("domains", "describe", "d1"),                          ("GET", "/api/v1/domains/d1")),
    (("domains", "update", "d1", "--idle-minutes", "5"),     ("PATCH", "/api/v1/domains/d1")),
    (("users", "list", "-d", "d1"),                          ("GET", "/api/v1/domains/d1/users")),
    (("users", "describe", "alice", "-d", "d1"),             ("GET", U)),
    (("users", "create", "carol", "-d", "d1"),               ("POST", "/api/v1/domains/d1/users")),
    (("tokens", "list", "-d", "d1", "-u", "alice"),          ("GET", f"{U}/tokens")),
    (("tokens", "create", "-d", "d1", "-u", "alice", "--note", "x"), ("POST", f"{U}/tokens")),
    (("apps", "list", "-d", "d1", "-u", "alice"),            ("GET", f"{U}/apps")),
    (("apps", "describe", "-d", "d1", "-u", "alice"),        ("GET", APP)),
    (("apps", "start", "second", "-d", "d1", "-u", "alice"), ("POST", f"{U}/apps")),
    (("apps", "stop", "-d", "d1", "-u", "alice"),            ("DELETE", APP)),
    (("apps", "open", "-d", "d1", "-u", "alice"),            ("POST", f"{APP}/presigned-url")),
    (("apps", "list", "--all"),                              ("GET", "/api/v1/apps")),
    (("jobs", "list", "-d", "d1", "-u", "alice"),            ("GET", f"{U}/jobs")),
    (("whoami",),                                            ("GET", "/api/v1/me")),
]  # fmt: skip
CLI_HINTS = {401: "profilerhub login", 403: "ask an administrator", 404: "check the names",
             409: "ResourceInUse"}  # fmt: skip


def _http_row(method: str, path: str) -> tuple[int, ...]:
    # The first row of a route is the one its CLI command sends (PATCH d1: PATCH_D1).
    return next(row[3] for row in MATRIX if (row[0], row[1]) == (method, path))


def test_cli_matrix_names_real_rows() -> None:
    assert all(_http_row(*route) for _, route in CLI_ROWS)


@pytest.mark.parametrize(("args", "route"), [pytest.param(*row, id=" ".join(row[0])) for row in CLI_ROWS])
def test_cli_permission_matrix(client: Any, seed: Any, args: tuple[str, ...], route: tuple[str, str]) -> None:
    from typer.testing import CliRunner

    from profilerhub.cli.main import app

    runner, tokens, wrong = CliRunner(), _tokens(seed), []
    for caller, status in zip(CALLERS, _http_row(*route), strict=True):
        env = {"PROFILERHUB_URL": str(client.base_url), "PROFILERHUB_TOKEN": tokens[caller],
               "PROFILERHUB_CONFIG": "/nonexistent/config.toml", "PROFILERHUB_OUTPUT": "json"}  # fmt: skip
        done = runner.invoke(app, [*args], env=env, obj={"http": client}, catch_exceptions=False)
        said = " ".join((done.stdout + done.stderr).split())
        if done.exit_code != (0 if status < 300 else 1):
            wrong.append(f"{caller}: the API answers {status}, the CLI exited {done.exit_code}: {said}")
        elif status >= 400 and CLI_HINTS[status] not in said:
            wrong.append(f"{caller}: {status} without {CLI_HINTS[status]!r}: {said}")
        assert "Traceback" not in said
        if route[0] != "GET" and done.exit_code == 0:
            _empty_and_reseed(seed, tokens)
    assert not wrong, "\n".join(wrong)
