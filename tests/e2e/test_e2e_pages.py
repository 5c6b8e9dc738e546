"""The profiler app's pages in a real headless Chromium, against a running hub, worker and app,
with real traces uploaded as jobs (``pages_stack``): what a data scientist sees and does.

Every test opens the app through a presigned URL (the hub's cookie path) and fails on any
console error, uncaught exception or failed request. Screenshots land in /tmp/ui-shots/.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from playwright.sync_api import expect

from tests.e2e.jobs_stack import JobStack
from tests.e2e.pages_stack import BrowserLog, PagesJobs, launch_browser, shot
from tests.support.hub import auth

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def pages_stack(tmp_path_factory: pytest.TempPathFactory, redis_url: str) -> Iterator[JobStack]:
    stack = JobStack.start(tmp_path_factory.mktemp("pages"), redis_url)
    yield stack
    stack.stop()


@pytest.fixture(scope="module")
def jobs(pages_stack: JobStack) -> PagesJobs:
    return PagesJobs.build(pages_stack)


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    yield from launch_browser()


@pytest.fixture
def app(browser: Any, pages_stack: JobStack, jobs: PagesJobs) -> Iterator[Any]:
    """A fresh browser context logged into alice's app; fails the test on any browser error."""
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    page = context.new_page()
    log = BrowserLog()
    log.watch(page)
    page.goto(jobs.presigned_url(pages_stack))  # sets the cookie, lands on the jobs page
    page.app_base = f"{pages_stack.url}/apps/{jobs.app_id}/"  # type: ignore[attr-defined]
    yield page
    context.close()
    assert log.errors == []


def row(page: Any, job_id: str) -> Any:
    return page.locator(f"#jobs tr[data-job='{job_id}']")


def test_the_jobs_page_lists_every_job_with_its_status_and_figures(app: Any, jobs: PagesJobs) -> None:
    app.wait_for_selector("#jobs tbody tr")
    for name in ("alexnet", "two-ranks", "compare-base", "compare-test", "sdk-cpu"):
        assert row(app, jobs.ids[name]).locator(".status").inner_text() == "Ready"
    assert row(app, jobs.ids["broken"]).locator(".status").inner_text() == "Failed"
    assert "gzip data is truncated" in row(app, jobs.ids["broken"]).locator(".reason").inner_text()
    two = row(app, jobs.ids["two-ranks"]).locator("td")
    assert two.nth(7).inner_text() == "2"  # ranks
    assert row(app, jobs.ids["sdk-cpu"]).locator("td").nth(5).inner_text() == "6"  # steps
    shot(app, "jobs")

    app.select_option("#filter-status", "Failed")
    expect(app.locator("#jobs tbody tr")).to_have_count(1)
    assert row(app, jobs.ids["broken"]).count() == 1
    assert "status=Failed" in app.url  # the filter is in the URL
    app.select_option("#filter-status", "")
    app.fill("#filter-name", "compare")
    expect(app.locator("#jobs tbody tr")).to_have_count(2)
    app.fill("#filter-name", "")
    app.click("th button[data-sort='name']")
    names = app.locator("#jobs tbody td.name a, #jobs tbody td.name:not(:has(a))").all_inner_texts()
    firsts = [n.splitlines()[0] for n in names]
    assert firsts == sorted(firsts)


def test_a_running_job_turns_ready_on_the_open_jobs_page(
    app: Any, jobs: PagesJobs, pages_stack: JobStack
) -> None:
    running = jobs.ids["still-running"]
    app.wait_for_selector(f"#jobs tr[data-job='{running}'][data-status='InProgress']")
    assert "running" in app.locator("#jobs-live").inner_text()
    done = httpx.post(
        f"{pages_stack.url}{jobs.jobs_url}/{running}/complete", headers=auth(jobs.token), timeout=30
    )
    assert done.status_code == 202
    # No reload: the page refreshes itself while a job is not final.
    app.wait_for_selector(f"#jobs tr[data-job='{running}'][data-status='Ready']", timeout=90_000)
