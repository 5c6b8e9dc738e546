"""The jobs list with thousands of jobs: the app asks the hub for one page at a time, sorted and
filtered in SQL (``limit``, ``next_token``, ``sort``, ``order``, ``name_contains``, ``status``),
and never reads more than that page's folders. Jobs are inserted straight into the hub's
database (a few thousand rows in one statement); the app and hub are the real ones, in-process."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import sqlalchemy as sa
from fastapi.testclient import TestClient

from profilerhub_core.db.models import Job, JobStatus, new_id
from profilerhub_core.records import domains, users
from profilerhub_worker.ingest import IngestContext

T0 = datetime(2026, 1, 1, tzinfo=UTC)
# name prefix -> (how many, status); zero-padded numbers so name order is string order
KINDS = {
    "resnet": (2000, JobStatus.Ready),
    "bert": (900, JobStatus.Failed),
    "gpt": (100, JobStatus.InProgress),
}
TOTAL = sum(n for n, _ in KINDS.values())


def _insert_jobs(
    ctx: IngestContext,
    user: str,
    kinds: dict[str, tuple[int, JobStatus]],
    facts: Callable[[int], dict[str, Any]] | None = None,
) -> list[dict[str, Any]]:
    """Rows for ``user`` of d1, created one second apart in the order of ``kinds`` (with the list's
    figures ``facts(n)`` on the n-th row)."""
    with ctx.sessions() as session:
        domain = domains.require_domain(session, "d1")
        owner = users.get_user(session, domain, user)
        assert owner is not None
        rows: list[dict[str, Any]] = []
        for prefix, (n, status) in kinds.items():
            for i in range(n):
                at = T0 + timedelta(seconds=len(rows))
                rows.append(
                    {
                        "id": new_id(),
                        "domain_id": domain.id,
                        "user_id": owner.id,
                        "name": f"{prefix}-{i:04d}",
                        "status": status,
                        "failure_reason": "raw/t.json: not valid JSON"
                        if status is JobStatus.Failed
                        else None,
                        "metric_definitions": [],
                        "created_at": at,
                        "updated_at": at,
                        **(facts(len(rows)) if facts else {}),
                    }
                )
        session.execute(sa.insert(Job), rows)
        session.commit()
    return rows


@pytest.fixture
def many(ctx: IngestContext, jobs_seed: Any) -> list[dict[str, Any]]:
    jobs_seed.user("d1", "bob")
    _insert_jobs(ctx, "bob", {"bobs": (50, JobStatus.Ready)})  # never counted or shown to alice
    return _insert_jobs(ctx, "alice", KINDS)


def _get(client: TestClient, **params: Any) -> dict[str, Any]:
    answer = client.get("api/jobs", params=params)
    assert answer.status_code == 200, answer.text
    doc: dict[str, Any] = answer.json()
    return doc


def test_the_first_page_is_small_and_counts_every_job_by_status(
    many: list[dict[str, Any]], app_client: TestClient
) -> None:
    page = _get(app_client)
    assert len(page["items"]) == 25 and page["next_token"]
    assert page["total"] == TOTAL
    assert page["status_counts"] == {"Ready": 2000, "Failed": 900, "InProgress": 100}
    newest = sorted(many, key=lambda r: r["created_at"], reverse=True)[:25]
    assert [j["job_id"] for j in page["items"]] == [r["id"] for r in newest]


def test_paging_with_next_token_walks_every_job_once_in_order(
    many: list[dict[str, Any]], app_client: TestClient
) -> None:
    seen: list[str] = []
    token = None
    for _ in range(10):
        page = _get(app_client, limit=1000, **({"next_token": token} if token else {}))
        seen += [j["job_id"] for j in page["items"]]
        token = page["next_token"]
        if not token:
            break
    assert seen == [r["id"] for r in sorted(many, key=lambda r: r["created_at"], reverse=True)]


def test_sorting_by_name_and_filtering_by_name_and_status_happen_in_the_hub(
    many: list[dict[str, Any]], app_client: TestClient
) -> None:
    by_name = _get(app_client, sort="name", order="asc", limit=50)
    assert [j["name"] for j in by_name["items"]] == sorted(r["name"] for r in many)[:50]
    second = _get(app_client, sort="name", order="asc", limit=50, next_token=by_name["next_token"])
    assert [j["name"] for j in second["items"]] == sorted(r["name"] for r in many)[50:100]

    failed = _get(app_client, name_contains="BERT-00", status="Failed", limit=1000)
    assert failed["total"] == 100 and len(failed["items"]) == 100
    assert all(j["status"] == "Failed" and j["failure_reason"] for j in failed["items"])
    assert failed["status_counts"] == {"Failed": 100}  # counts follow the name filter

    two = _get(app_client, status="Ready,InProgress", limit=1)
    assert two["total"] == 2100
    assert _get(app_client, name_contains="no-such-run")["items"] == []


@pytest.mark.parametrize(
    ("params", "says"),
    [
        ({"limit": 1001}, "limit"),
        ({"limit": 0}, "limit"),
        ({"sort": "bogus"}, "sort"),
        ({"order": "sideways"}, "order"),
        ({"status": "Nope"}, "status"),
        ({"next_token": "forged.token"}, "next_token"),
    ],
)
def test_bad_list_parameters_answer_400_with_the_reason(
    many: list[dict[str, Any]], app_client: TestClient, params: dict[str, Any], says: str
) -> None:
    answer = app_client.get("api/jobs", params=params)
    assert answer.status_code == 400, answer.text
    assert answer.json()["error"]["code"] == "ValidationError"
    assert says in answer.json()["error"]["message"]


def test_a_page_token_of_another_sort_is_refused(many: list[dict[str, Any]], app_client: TestClient) -> None:
    token = _get(app_client, sort="name")["next_token"]
    answer = app_client.get("api/jobs", params={"sort": "status", "next_token": token})
    assert answer.status_code == 400 and "next_token" in answer.json()["error"]["message"]


FIGURES = ("duration_s", "steps", "gpus", "ranks")


def _figures(n: int) -> dict[str, Any]:
    """Ties in every column, and nulls (a job not Ready yet, or ingested before the columns)."""
    if n % 5 == 0:
        return dict.fromkeys(FIGURES)
    return {"duration_s": (n % 4) * 1.5, "steps": n % 3 * 10, "gpus": n % 2 + 1, "ranks": n % 4}


def _walk(client: TestClient, limit: int, **params: Any) -> list[dict[str, Any]]:
    seen: list[dict[str, Any]] = []
    token = None
    while True:
        page = _get(client, limit=limit, **params, **({"next_token": token} if token else {}))
        seen += page["items"]
        token = page["next_token"]
        if not token:
            return seen


@pytest.mark.parametrize("key", FIGURES)
@pytest.mark.parametrize("order", ["asc", "desc"])
def test_sorting_by_a_figure_pages_every_job_once_with_nulls_last(
    ctx: IngestContext, jobs_seed: Any, app_client: TestClient, key: str, order: str
) -> None:
    rows = _insert_jobs(ctx, "alice", {"run": (23, JobStatus.Ready)}, facts=_figures)
    seen = _walk(app_client, 4, sort=key, order=order)
    desc = order == "desc"
    valued = sorted((r for r in rows if r[key] is not None), key=lambda r: (r[key], r["id"]), reverse=desc)
    nulls = sorted((r["id"] for r in rows if r[key] is None), reverse=desc)
    assert [j["job_id"] for j in seen] == [r["id"] for r in valued] + nulls
    # the page shows the hub's figures (no folder holds a status file for these rows)
    assert [j[key] for j in seen] == [r[key] for r in valued] + [None] * len(nulls)


def test_a_page_token_is_bound_to_the_figure_and_order_it_sorted_by(
    ctx: IngestContext, jobs_seed: Any, app_client: TestClient
) -> None:
    _insert_jobs(ctx, "alice", {"run": (12, JobStatus.Ready)}, facts=_figures)
    token = _get(app_client, sort="duration_s", order="asc", limit=5)["next_token"]
    for other in ({"sort": "steps", "order": "asc"}, {"sort": "duration_s", "order": "desc"}):
        answer = app_client.get("api/jobs", params={**other, "limit": 5, "next_token": token})
        assert answer.status_code == 400 and "next_token" in answer.json()["error"]["message"]
