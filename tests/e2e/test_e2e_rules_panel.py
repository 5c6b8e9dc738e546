"""The dashboard's rules panel in a real headless Chromium: a job (a real torch trace plus SDK
records whose data loader stalls once) ingested by the worker, opened in its owner's profiler
app through a presigned URL: each rule's status, the Dataloader finding with its figures and
recommendation, a time range that opens the timeline there, and the report's link; no console
error, no failed request."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.sync_api import expect

from tests.e2e.jobs_stack import JobStack
from tests.e2e.pages_stack import DOMAIN, TRACE_JOBS, USER, BrowserLog, PagesJobs, launch_browser, shot
from tests.support.hub import auth
from tests.support.jobs import stalled_sdk_files

pytestmark = pytest.mark.slow


@pytest.fixture
def stalled_job(tmp_path: Path, redis_url: str) -> Iterator[tuple[JobStack, PagesJobs, str]]:
    stack = JobStack.start(tmp_path, redis_url)
    try:
        jobs = PagesJobs(stack.user_token(DOMAIN, USER))
        with httpx.Client(base_url=stack.url, headers=auth(jobs.token), timeout=60) as http:
            rules = ["Dataloader", "StepOutlier", "LowGPUUtilization", "GPUMemoryIncrease"]
            body = {"name": "stalled", "rules": rules}
            job_id = http.post(jobs.jobs_url, json=body).json()["job_id"]
            trace = TRACE_JOBS["compare-base"][0]
            files = {f"torch/{trace.name}": trace.read_bytes(), **stalled_sdk_files()}
            for name, data in files.items():
                assert http.put(f"{jobs.jobs_url}/{job_id}/files/{name}", content=data).status_code == 201
            assert http.post(f"{jobs.jobs_url}/{job_id}/complete").status_code == 202
        assert stack.wait_for_job(jobs.token, job_id)["status"] == "Ready"
        jobs.app_id = jobs.start_app(stack)
        yield stack, jobs, job_id
    finally:
        stack.stop()


def test_the_rules_panel_shows_each_rule_its_findings_and_links_into_the_timeline(
    stalled_job: tuple[JobStack, PagesJobs, str],
) -> None:
    stack, jobs, job_id = stalled_job
    for browser in launch_browser():
        page: Any = browser.new_context(viewport={"width": 1400, "height": 900}).new_page()
        log = BrowserLog()
        log.watch(page)
        page.goto(jobs.presigned_url(stack))
        page.goto(f"{stack.url}/apps/{jobs.app_id}/jobs/{job_id}")
        page.wait_for_selector("#rules-panel[data-ready='true']", timeout=90_000)  # a loaded machine is slow
        panel = page.locator("#rules-panel")
        assert panel.get_attribute("data-final") == "true"
        assert panel.locator(".rules-head .status").inner_text() == "IssuesFound"
        cards = panel.locator(".rule-card")
        assert cards.evaluate_all("cs => cs.map(c => c.dataset.rule)") == [
            "Dataloader", "StepOutlier", "LowGPUUtilization", "GPUMemoryIncrease",
        ]  # fmt: skip
        loader = panel.locator(".rule-card[data-rule='Dataloader']")
        assert loader.get_attribute("data-status") == "IssuesFound"
        stall = loader.locator(".rule-finding", has_text="a data fetch took 500.0 ms")
        expect(stall).to_have_count(1)
        assert "fetch_ms" in stall.locator(".rule-figures").inner_text()
        assert "DataLoader" in loader.locator(".rule-recommendation").inner_text()
        gpu = panel.locator(".rule-card[data-rule='LowGPUUtilization']")
        assert gpu.get_attribute("data-status") in ("Error", "NoIssuesFound", "IssuesFound")
        assert gpu.locator(".rule-reason").inner_text()  # says why, whatever the status
        # no GPU memory samples: the rule is short of data, a grey "No data" saying why, not a red Error
        memory = panel.locator(".rule-card[data-rule='GPUMemoryIncrease']")
        assert memory.get_attribute("data-status") == "Error"
        assert memory.get_attribute("data-missing-data") == "true"
        assert memory.locator(".status").inner_text() == "No data"
        assert memory.locator(".rule-reason").inner_text().startswith("no GPU memory samples")
        report = panel.locator("#rules-report")
        assert report.get_attribute("href").endswith(f"api/jobs/{job_id}/report")
        shot(page, "dashboard-rules")

        link = stall.locator("a.rule-range")
        start_us = (1_000_000_000_000 + 20 * 20 * 1_000_000) / 1000  # the stalled fetch's start, µs
        href = link.get_attribute("href")
        assert f"/jobs/{job_id}/timeline?t0us=" in href
        t0us, t1us = (float(v.split("=")[1]) for v in href.split("?")[1].split("&"))
        assert t0us < start_us < start_us + 500_000 < t1us  # the range, with a margin
        link.click()
        page.wait_for_url("**/timeline?t0us=*", timeout=90_000)
        page.wait_for_selector("#tl-view[data-ready='true']", state="attached", timeout=90_000)
        assert log.errors == []
