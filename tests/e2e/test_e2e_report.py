"""The profiling report, downloaded from the hub after a real ingest, opened offline in Chromium:
no console errors, no request at all beyond the file, every section present with its plots."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from profilerhub_analysis.html_report import SECTIONS
from tests.e2e.pages_stack import BrowserLog, launch_browser, shot
from tests.hub.test_hub_report_metrics_api import JOBS, ready_job  # noqa: F401 - the fixture
from tests.support.hub import auth


def test_the_downloaded_report_reads_offline_in_chromium(
    jobs_client: Any,
    ready_job: Any,  # noqa: F811 - the imported fixture
    tmp_path: Path,
) -> None:
    job_id, token = ready_job
    html = jobs_client.get(f"{JOBS}/{job_id}/report", headers=auth(token)).text
    path = tmp_path / "report.html"
    path.write_text(html)
    requests: list[str] = []
    for browser in launch_browser():
        page = browser.new_page()
        log = BrowserLog()
        log.watch(page)
        page.on("request", lambda r: requests.append(r.url))
        page.goto(path.as_uri())
        for key, title in SECTIONS:
            heading = page.locator(f"section#{key} h2")
            assert heading.inner_text() == title and heading.is_visible()
        assert page.locator("svg polyline").count() >= 3
        shot(page, "profiling-report")
        assert log.errors == []
    assert requests == [path.as_uri()]
