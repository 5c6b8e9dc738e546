"""End to end in a real browser: the jobs page shows how far a job's ingest has come.

A stack whose only worker consumes the app queue (``worker --queues apps``: it spawns the profiler
app, and nothing takes the ingest queue), so a completed job waits, shown as waiting for an ingest
worker. This test process then plays the ingest worker on the stack's own database and storage:
it claims the job and writes the progress a fanned-out ingest writes (``fanout.put_progress``),
which the open page shows on its next refresh as a bar and "1 of 2 traces"; then it ingests the
job to the end, and the page turns it Ready, without a reload."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.e2e.jobs_stack import JobStack, _stop
from tests.e2e.pages_stack import DOMAIN, HTA, USER, BrowserLog, PagesJobs, launch_browser, shot
from tests.support.hub import TEST_SECRET_KEY, auth

pytestmark = pytest.mark.slow

RANKS = [HTA / "trace_filter/sampled_rank-0.json.gz", HTA / "trace_filter/sampled_rank-1.json.gz"]


@pytest.fixture(scope="module")
def apps_only_stack(tmp_path_factory: pytest.TempPathFactory, redis_url: str) -> Iterator[JobStack]:
    stack = JobStack.start(tmp_path_factory.mktemp("progress"), redis_url)
    _stop(stack.worker)
    stack.worker = stack._spawn("worker", "--queues", "apps", "--concurrency", "2")
    yield stack
    stack.stop()


def _ingest_context(stack: JobStack) -> Any:
    """An ingest context on the stack's own database and storage, built as its worker builds it."""
    from profilerhub_core.settings import Settings
    from profilerhub_core.storage import open_store
    from profilerhub_worker.ingest import IngestContext

    settings = Settings(home=Path(stack.env["PROFILERHUB_HOME"]), secret_key=TEST_SECRET_KEY)
    return IngestContext.from_settings(settings, open_store(settings.storage_url))


def test_the_jobs_page_shows_a_jobs_ingest_trace_by_trace_until_it_is_ready(
    apps_only_stack: JobStack,
) -> None:
    from profilerhub_core.db.models import Job, JobStatus
    from profilerhub_core.jobstorage import place_of
    from profilerhub_worker.ingest import claim, ingest_job
    from profilerhub_worker.ingest.claim import finish
    from profilerhub_worker.ingest.fanout import put_progress

    stack = apps_only_stack
    jobs = PagesJobs(stack.user_token(DOMAIN, USER))
    jobs.app_id = jobs.start_app(stack)
    with httpx.Client(base_url=stack.url, headers=auth(jobs.token), timeout=60) as http:
        job_id = http.post(jobs.jobs_url, json={"name": "ranks"}).json()["job_id"]
        sizes = []
        for n, path in enumerate(RANKS):
            body = path.read_bytes()
            sizes.append(len(body))
            put = http.put(f"{jobs.jobs_url}/{job_id}/files/torch/rank_{n}.pt.trace.json.gz", content=body)
            assert put.status_code == 201, put.text
        assert http.post(f"{jobs.jobs_url}/{job_id}/complete").status_code == 202

    with app_page(stack, jobs) as page:
        row = page.locator(f"#jobs tr[data-job='{job_id}']")
        row.locator(".progress", has_text="waiting for an ingest worker").wait_for()

        ctx = _ingest_context(stack)
        stamp = claim(ctx, job_id)  # this process is the ingest worker now
        assert stamp is not None
        with ctx.sessions() as session:
            job = session.get(Job, job_id)
            assert job is not None
            place = place_of(job)
        put_progress(ctx, place, 1, 2, sizes[0], sum(sizes))
        done = row.locator(".progress[data-ingest='1/2']")
        done.wait_for(timeout=30_000)  # the page's own refresh, no reload
        assert row.get_attribute("data-status") == "Processing"
        assert "1 of 2 traces" in done.inner_text() and "ingested" in done.inner_text()
        assert done.locator("progress").get_attribute("value") == "1"
        assert done.locator("progress").get_attribute("max") == "2"
        shot(page, "jobs-progress")

        assert ingest_job(job_id, ctx, stamp.isoformat()) == "Ready"  # the rest, to the end
        page.wait_for_selector(f"#jobs tr[data-job='{job_id}'][data-status='Ready']", timeout=30_000)
        assert row.locator(".progress").count() == 0

        # Three more jobs: two claimed (the owner's share, job_ingest_jobs_per_user = 2), the third
        # waits for them, and its row says so (the hub's status_reason; the page is reloaded, as
        # with every job final it refreshes only every 30 s).
        with httpx.Client(base_url=stack.url, headers=auth(jobs.token), timeout=60) as http:
            more = [http.post(jobs.jobs_url, json={"name": f"more-{n}"}).json()["job_id"] for n in range(3)]
            for more_id in more:
                assert http.post(f"{jobs.jobs_url}/{more_id}/complete").status_code == 202
        stamps = [claim(ctx, more_id) for more_id in more[:2]]
        assert None not in stamps
        page.reload()
        waiting = page.locator(f"#jobs tr[data-job='{more[2]}'] .progress[data-waiting]")
        waiting.filter(has_text="Waiting: 2 of your jobs are ingesting (limit 2)").wait_for(timeout=30_000)
        shot(page, "jobs-waiting")
        for more_id, more_stamp in zip(more[:2], stamps, strict=True):
            assert more_stamp is not None
            assert finish(ctx, more_id, more_stamp, JobStatus.Failed, failure_reason="test over")
        ctx.sessions.kw["bind"].dispose()


@contextmanager
def app_page(stack: JobStack, jobs: PagesJobs) -> Iterator[Any]:
    """A headless Chromium page on the owner's jobs page; fails the test on any browser error."""
    for browser in launch_browser():
        context = browser.new_context(viewport={"width": 1400, "height": 700})
        page = context.new_page()
        log = BrowserLog()
        log.watch(page)
        page.goto(jobs.presigned_url(stack))  # sets the cookie, lands on the jobs page
        page.wait_for_selector("#jobs tbody tr")
        yield page
        context.close()
        assert log.errors == []
