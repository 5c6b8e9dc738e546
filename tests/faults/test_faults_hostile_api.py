"""A hostile-input corpus over the hub's API: deep nesting, huge bodies, control characters,
odd escapes, reused names, bad tokens. Every answer is a 4xx in the one error shape with no
traceback, and nothing in the database changes (the audit log aside: refusals are recorded)."""

from __future__ import annotations

import json
from typing import Any

import sqlalchemy as sa

from profilerhub_core.db.models import Base
from tests.support.hub import auth

API = "/api/v1"
DEEP = "[" * 100_000 + "]" * 100_000


def _state(seed: Any) -> dict[str, int]:
    with seed.session() as session:
        return {
            t.name: session.scalar(sa.select(sa.func.count()).select_from(t))
            for t in Base.metadata.sorted_tables
            if t.name != "audit_events"
        }


def corpus(admin: dict[str, str]) -> list[tuple[str, str, dict[str, Any]]]:
    """(method, path, request options): each one must be refused."""
    json_headers = admin | {"content-type": "application/json"}
    bodies = [
        DEEP,
        '{"name": ' + DEEP + "}",
        '{"name": "ok", "settings": ' + '{"a": ' * 50_000 + "1" + "}" * 50_000 + "}",
        '{"name": "' + "x" * (2 << 20) + '"}',  # over the 1 MiB body limit
        '{"name": "d1"}',  # a reused name
        '{"name": "a\\u0000b"}',
        '{"name": "\\u001b[31mred"}',
        '{"name": "\\u202egnp.exe"}',
        '{"name": "ok", "settings": {"idle_minutes": 1e400}}',
        '{"name": "ok", "settings": {"idle_minutes": NaN}}',
        '{"name": "ok", "name": "../x"}',
        "not json at all",
        "",
        "\xff\xfe",
        "[]",
        "null",
    ]
    out: list[tuple[str, str, dict[str, Any]]] = [
        (
            "POST",
            f"{API}/domains",
            {"content": body.encode("utf-8", "surrogatepass"), "headers": json_headers},
        )
        for body in bodies
    ]
    out += [
        ("POST", f"{API}/domains/d1/users", {"content": body.encode(), "headers": json_headers})
        for body in ('{"name": "alice"}', '{"name": "bob", "role": "root"}', DEEP)
    ]
    out += [
        ("POST", f"{API}/domains/d1/users/alice/tokens", {"json": body, "headers": admin})
        for body in ({"scopes": ["*", "Nope"]}, {"expires_in_seconds": -5}, {"note": "x" * 5000})
    ]
    paths = [
        "/domains/%00",
        "/domains/%01",
        "/domains/..%2F..%2Fetc",
        "/domains/" + "a" * 10_000,
        "/domains/d1/users/%E2%80%AE",
        "/domains/d1/users/alice/jobs/%2e%2e",
        "/audit?since=2026-01-01T00:00:00",
        "/audit?limit=-1",
        "/audit?limit=100000000000000000000",
        "/audit?next_token=%00%01garbage",
        "/domains?next_token=" + "A" * 5000,
    ]
    out += [("GET", f"{API}{p}", {"headers": admin}) for p in paths]
    out += [("DELETE", f"{API}/domains/system", {"headers": admin})]
    bad_tokens = [
        "",
        "Bearer",
        "Bearer ",
        "Bearer " + "x" * 10_000,
        "Basic YWRtaW46YWRtaW4=",
        "Bearer phk_forged",
    ]
    out += [("GET", f"{API}/me", {"headers": {"authorization": t}}) for t in bad_tokens]
    out += [
        ("POST", f"{API}/domains", {"json": {"name": "ok2"}, "headers": {"authorization": t}})
        for t in bad_tokens
    ]
    out += [
        ("GET", "/apps/00000000-0000-0000-0000-000000000000/x%01y", {"headers": admin}),
        ("GET", "/apps/%00/", {"headers": admin}),
        ("POST", "/apps/not-an-app/api/x", {"headers": admin, "content": DEEP.encode()}),
    ]
    return out


def test_a_hostile_corpus_gets_only_4xx_in_the_error_shape_and_changes_nothing(
    client: Any, seed: Any, capsys: Any
) -> None:
    seed.user("d1", "alice")
    admin = auth(seed.admin_token)
    before = _state(seed)
    cases = corpus(admin)
    answers = []
    for method, path, options in cases:
        answer = client.request(method, path, **options)
        answers.append((method, path[:60], answer.status_code, answer.text[:300]))
    server_errors = [a for a in answers if a[2] >= 500 and a[2] != 503]
    accepted = [a for a in answers if a[2] < 400]
    assert server_errors == [] and accepted == [], server_errors + accepted
    for method, path, status, text in answers:
        body = json.loads(text) if text.startswith("{") and text.endswith("}") else None
        assert "Traceback" not in text, (method, path)
        if len(text) < 300:
            assert body is not None and set(body) == {"error"}, (method, path, status, text)
            assert body["error"]["code"] and body["error"]["message"], (method, path, text)
    assert _state(seed) == before
    with capsys.disabled():
        print(f"\nhostile API corpus: {len(cases)} requests, {len(server_errors)} 5xx, state changed: no")
