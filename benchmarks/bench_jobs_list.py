"""The jobs page's question to the hub with many jobs: ``GET /api/v1/apps/{id}/owner/jobs``.

    .venv/bin/python benchmarks/bench_jobs_list.py [--jobs 10000] [--repeat 20]

An in-process hub on a fresh SQLite database (migrated as ``profilerhub db upgrade`` does), one
user with ``--jobs`` jobs inserted in one statement, asked with a real app token as the profiler
app asks. Prints the median and best time of the pages the jobs page asks for (the first page of
25, a page deep in the list through ``next_token``, a name + status filter, a sort by name) and, as
the anchor measured in the same run, the whole list at once (every page of 1,000: what one
request cost before the list was paged).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any


def timed(fn: Callable[[], Any], repeat: int) -> tuple[float, float]:
    runs = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        runs.append((time.perf_counter() - t0) * 1000)
    return statistics.median(runs), min(runs)


def build(home: Path, n: int) -> tuple[Any, str, dict[str, str]]:
    """The hub's test client, the app's id and the app token's headers."""
    import sqlalchemy as sa
    from fastapi.testclient import TestClient

    from profilerhub_core.apptokens import hub_signing_key, issue_app_token
    from profilerhub_core.bootstrap import first_start
    from profilerhub_core.db.migrate import upgrade
    from profilerhub_core.db.models import AppType, Job, JobStatus, Role, new_id
    from profilerhub_core.records import apps, domains, users
    from profilerhub_core.settings import Settings
    from profilerhub_hub.main import create_app

    settings = Settings(
        home=home, secret_key="bench-" + "k" * 40, environment="development", access_log=False
    )  # type: ignore[arg-type]
    from profilerhub_core.db.session import make_engine

    upgrade(make_engine(settings))
    hub = create_app(settings)
    first_start(settings, hub.state.services.engine)
    with hub.state.services.sessions() as session:
        domain = domains.create_domain(session, "bench", None)
        user = users.create_user(session, domain, "alice", Role("user"))
        app = apps.create_user_app(session, domain, user, AppType.DetailedProfiler, "default", actor="bench")
        session.flush()
        t0 = datetime(2026, 1, 1, tzinfo=UTC)
        statuses = [JobStatus.Ready] * 8 + [JobStatus.Failed, JobStatus.InProgress]
        rows = [
            {
                "id": new_id(),
                "domain_id": domain.id,
                "user_id": user.id,
                "name": f"run-{i:06d}",
                "status": statuses[i % len(statuses)],
                "failure_reason": "bad trace" if statuses[i % len(statuses)] is JobStatus.Failed else None,
                "metric_definitions": [],
                "created_at": t0 + timedelta(seconds=i),
                "updated_at": t0 + timedelta(seconds=i),
            }
            for i in range(n)
        ]
        session.execute(sa.insert(Job), rows)
        session.commit()
        app_id, user_id = app.id, user.id
    token = issue_app_token(hub_signing_key(settings), app_id, user_id)
    return TestClient(hub), app_id, {"Authorization": f"Bearer {token}"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=20)
    args = parser.parse_args()
    print(f"command: {' '.join([sys.executable, *sys.argv])}")
    with tempfile.TemporaryDirectory() as tmp:
        client, app_id, headers = build(Path(tmp), args.jobs)
        url = f"/api/v1/apps/{app_id}/owner/jobs"

        def get(**params: Any) -> dict[str, Any]:
            answer = client.get(url, params=params, headers=headers)
            assert answer.status_code == 200, answer.text
            doc: dict[str, Any] = answer.json()
            return doc

        deep = get(limit=25)
        for _ in range(args.jobs // 2 // 25):  # the token of a page half way down the list
            deep = get(limit=25, next_token=deep["next_token"])

        def whole() -> None:
            page = get(limit=1000)
            while page["next_token"]:
                page = get(limit=1000, next_token=page["next_token"])

        cases = [
            ("first page of 25", lambda: get(limit=25)),
            ("page half way down (next_token)", lambda: get(limit=25, next_token=deep["next_token"])),
            ("name contains + status", lambda: get(limit=25, name_contains="run-0012", status="Failed")),
            ("sorted by name, ascending", lambda: get(limit=25, sort="name", order="asc")),
            (f"anchor: all {args.jobs:,} jobs, pages of 1000", whole),
        ]
        print(f"{args.jobs:,} jobs of one user, SQLite, in-process hub, {args.repeat} runs each")
        for name, fn in cases:
            median, best = timed(fn, args.repeat)
            print(f"  {name:<40} median {median:8.1f} ms   best {best:8.1f} ms")


if __name__ == "__main__":
    main()
