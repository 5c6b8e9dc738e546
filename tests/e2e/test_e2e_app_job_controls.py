"""A running job's dashboard in the owner's profiler app, in a real headless Chromium: a real
PyTorch CPU run instrumented with the SDK against ``profilerhub hub`` and ``worker`` processes and
the spawned app. The log panel shows the lines the script prints and follows new ones as they
arrive, switches streams (a second rank's), filters; "Capture 3 steps now" yields a trace of
exactly 3 steps, which the dashboard lists (its timeline open) while the run still goes on;
"Stop" ends the script's loop with ``ph.StopTraining``, after which the panel stops following
and shows the run's last line. No console error, no failed request."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.sync_api import expect

from tests.e2e.jobs_stack import JobStack
from tests.e2e.pages_stack import DOMAIN, USER, BrowserLog, PagesJobs, launch_browser, shot
from tests.support.hub import auth, wait_for
from tests.support.jobs import jsonl_gz
from tests.support.training import cpu_training_script, run_env

pytestmark = pytest.mark.slow

SCRIPT = cpu_training_script(
    'job="app-live", sample_interval_s=0.2, chunk_interval_s=0.5, flush_timeout_s=60',
    after_step="""\
    print(f"step {i} loss={loss.item():.4f}", flush=True)
    if i % 10 == 0:
        print(f"checkpoint {i}", flush=True)
    """,
    pause_s=0.05,
)


@pytest.fixture
def stack(tmp_path: Path, redis_url: str) -> Iterator[JobStack]:
    stack = JobStack.start(tmp_path, redis_url)
    try:
        yield stack
    finally:
        stack.stop()


def _total(page: Any) -> int:
    return int(page.locator("#log-panel").get_attribute("data-total") or 0)


def _steer_in_the_app(
    page: Any, stack: JobStack, jobs: PagesJobs, job_id: str, http: httpx.Client, child: Any
) -> None:
    """The dashboard of the running job: its log followed, filtered, switched; a capture; the stop."""
    log = BrowserLog()
    log.watch(page)
    page.goto(jobs.presigned_url(stack))
    page.goto(f"{stack.url}/apps/{jobs.app_id}/jobs/{job_id}")
    page.wait_for_selector("#log-panel[data-ready='true']", timeout=90_000)
    wait_for(lambda: _total(page) >= 5, "five lines in the log panel", 120, 0.2)
    first = _total(page)
    wait_for(lambda: _total(page) > first + 5, "new lines appended while it runs", 120, 0.2)
    last = page.locator("#log-lines .log-line span").last.inner_text()
    assert last.startswith(("step ", "checkpoint ")), last
    assert page.locator("#log-rank").input_value() == "0"
    assert "following" in page.locator("#log-status").inner_text()
    shot(page, "app-log-live")

    page.fill("#log-filter", "checkpoint")
    shown = page.locator("#log-lines .log-line:not([hidden]) span").all_inner_texts()
    assert shown and all(t.startswith("checkpoint ") for t in shown), shown
    assert int(page.locator("#log-panel").get_attribute("data-shown") or 0) < _total(page)
    page.fill("#log-filter", "")

    # a second rank's stream: its lines under its own name in the selector
    rank1 = jsonl_gz([{"ts_ns": 1, "source": "stderr", "message": f"rank one says {i}"} for i in range(3)])
    put = http.put(f"{jobs.jobs_url}/{job_id}/files/logs/rank1/000001.jsonl.gz", content=rank1)
    assert put.status_code == 201, put.text
    expect(page.locator("#log-rank option")).to_have_count(2, timeout=60_000)
    page.select_option("#log-rank", "1")
    expect(page.locator("#log-lines .log-line")).to_have_count(3, timeout=30_000)
    assert page.locator("#log-lines .log-line").first.get_attribute("data-source") == "stderr"
    page.select_option("#log-rank", "0")
    wait_for(lambda: _total(page) > first, "rank 0's lines again", 60, 0.2)

    page.fill("#capture-steps", "3")
    expect(page.locator("#capture-now")).to_have_text("Capture 3 steps now")
    page.click("#capture-now")
    expect(page.locator("#job-actions-note")).to_contain_text("3 steps", timeout=30_000)
    raw = Path(stack.env["PROFILERHUB_HOME"]) / "storage"
    traces: list[Path] = []

    def captured() -> bool:
        traces[:] = sorted(raw.glob(f"**/{job_id}/raw/torch/*.capture-*.pt.trace.json.gz"))
        return bool(traces)

    wait_for(captured, "the capture's trace uploaded", 120, 0.2)
    events = json.loads(gzip.decompress(traces[0].read_bytes()))["traceEvents"]
    steps = {e["name"] for e in events if str(e.get("name", "")).startswith("ProfilerStep#")}
    assert len(steps) == 3, sorted(steps)
    # ingested while the run goes on: the dashboard lists it, its timeline opens
    capture = page.locator("#captures .capture[data-index='0'] .capture-timeline")
    expect(capture).to_have_count(1, timeout=120_000)
    assert http.get(f"{jobs.jobs_url}/{job_id}").json()["status"] == "InProgress"
    lanes = jobs.api(stack, f"jobs/{job_id}/timeline/lanes?trace=0")
    assert ".capture-" in lanes["trace"]["file"]
    shot(page, "app-capture-live")

    page.once("dialog", lambda dialog: dialog.accept())
    page.click("#stop-job")
    expect(page.locator("#job-actions-note")).to_contain_text("Stop asked", timeout=30_000)
    out, _ = child.communicate(timeout=120)
    text = out.decode(errors="replace")
    assert child.returncode == 0, text
    assert "stopped by StopTrainingJob" in text, text
    expect(page.locator("#log-lines")).to_contain_text("stopped by StopTrainingJob", timeout=90_000)
    expect(page.locator("#job-actions")).to_have_attribute("data-running", "false", timeout=90_000)
    expect(page.locator("#log-status")).to_contain_text("the run is over", timeout=30_000)
    printed = [line for line in text.splitlines() if line.startswith(("step ", "checkpoint ", "stopped "))]
    assert _total(page) >= len(printed)
    shot(page, "app-log-stopped")
    assert log.errors == []


def test_a_running_jobs_log_follows_new_lines_and_its_capture_and_stop_buttons_steer_the_run(
    stack: JobStack, tmp_path: Path
) -> None:
    jobs = PagesJobs(stack.user_token(DOMAIN, USER))
    jobs.app_id = jobs.start_app(stack)
    script = tmp_path / "train.py"
    script.write_text(SCRIPT)
    env = run_env(stack.url, jobs.token, GIVE_UP_S="240", PROFILERHUB_SPILL_DIR=str(stack.spill_dir))
    child = subprocess.Popen([sys.executable, str(script)], env=env, stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, cwd=tmp_path)  # fmt: skip
    http = httpx.Client(base_url=stack.url, headers=auth(jobs.token), timeout=30)
    try:
        found: list[str] = []

        def registered() -> bool:
            items = http.get(jobs.jobs_url, params={"status": "InProgress"}).json()["items"]
            found[:] = [j["job_id"] for j in items if j["name"] == "app-live"]
            return bool(found)

        wait_for(registered, "the run's job InProgress", 120, 0.2)
        job_id = found[0]
        for browser in launch_browser():
            page = browser.new_context(viewport={"width": 1400, "height": 1000}).new_page()
            _steer_in_the_app(page, stack, jobs, job_id, http, child)
        job = stack.wait_for_job(jobs.token, job_id)
        assert job["status"] == "Ready" and job["stop_request"]["by"] == "user"
    finally:
        http.close()
        if child.poll() is None:
            child.kill()
            child.wait()
