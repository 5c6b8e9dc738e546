"""A running ProfilerHub with real jobs for the page tests: hub + worker processes (``JobStack``),
real traces from ``../shared/traces`` uploaded through the hub's job API and ingested by the
worker, the CPU training run of the SDK, the owner's profiler app spawned for real, and a
headless Chromium that opens it through a presigned URL (the browser holds the app's cookie;
the hub proxies).

    jobs = PagesJobs.build(stack)          # uploads and waits until every job is Ready
    page = open_app(browser, stack, jobs)  # a page at /apps/{id}/ with console errors recorded
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.e2e.jobs_stack import JobStack
from tests.support.hub import auth, wait_for

CHROMIUM = "/usr/bin/chromium"
TRACES = Path(__file__).resolve().parents[2].parent / "shared" / "traces"
HTA = TRACES / "hta" / "tests" / "data"
DOMAIN, USER = "ml", "alice"  # the domain JobStack.wait_for_job reads
SHOTS = Path(os.environ.get("PROFILERHUB_TEST_SHOTS", "/tmp/ui-shots"))

# name -> trace files (one job each; several files = several ranks)
TRACE_JOBS = {
    "alexnet": [HTA / "critical_path/alexnet/benchmark_result_2869224_1695835535_trace.json.gz"],
    "two-ranks": [HTA / "trace_filter/sampled_rank-0.json.gz", HTA / "trace_filter/sampled_rank-1.json.gz"],
    "compare-base": [HTA / "trace_compare/base/base.json.gz"],
    "compare-test": [HTA / "trace_compare/test/test.json.gz"],
    "mlp-cpu": [TRACES / "torch-cpu" / "mlp_cpu_10steps.pt.trace.json"],  # memory records, input shapes
    "event-sync": [HTA / "critical_path/cuda_event_sync_multi_stream/event_sync_trace.json.gz"],  # no TC used
    "modules-cpu": [Path(__file__).parents[1] / "data" / "torch" / "modules_cpu_3steps.pt.trace.json.gz"],
    # a bf16 run on an H200: cuBLAS's nvjet_sm90 GEMMs and cuDNN's wgmma attention kernels
    "h200-vit": [Path(__file__).parents[1] / "data/cuda/h200_run/torch/vm_540.1.pt.trace.json.gz"],
}


@dataclass
class PagesJobs:
    """The jobs of ``alice`` the page tests look at, by name -> job id."""

    token: str
    ids: dict[str, str] = field(default_factory=dict)
    app_id: str = ""

    @property
    def jobs_url(self) -> str:
        return f"/api/v1/domains/{DOMAIN}/users/{USER}/jobs"

    @classmethod
    def build(cls, stack: JobStack) -> PagesJobs:
        jobs = cls(stack.user_token(DOMAIN, USER))
        with httpx.Client(base_url=stack.url, headers=auth(jobs.token), timeout=60) as http:
            for name, files in TRACE_JOBS.items():
                job_id = http.post(jobs.jobs_url, json={"name": name}).json()["job_id"]
                for path in files:
                    put = http.put(
                        f"{jobs.jobs_url}/{job_id}/files/torch/{path.name}", content=path.read_bytes()
                    )
                    assert put.status_code == 201, put.text
                assert http.post(f"{jobs.jobs_url}/{job_id}/complete").status_code == 202
                jobs.ids[name] = job_id
            # A job whose upload is cut short fails with its reason; one never completed stays InProgress.
            broken = http.post(jobs.jobs_url, json={"name": "broken"}).json()["job_id"]
            data = TRACE_JOBS["alexnet"][0].read_bytes()
            http.put(f"{jobs.jobs_url}/{broken}/files/torch/cut.json.gz", content=data[: len(data) // 2])
            assert http.post(f"{jobs.jobs_url}/{broken}/complete").status_code == 202
            running = http.post(jobs.jobs_url, json={"name": "still-running"}).json()["job_id"]
            http.put(
                f"{jobs.jobs_url}/{running}/files/torch/{TRACE_JOBS['compare-base'][0].name}",
                content=TRACE_JOBS["compare-base"][0].read_bytes(),
            )
            jobs.ids |= {"broken": broken, "still-running": running}
        run = stack.train(jobs.token, 6)  # the SDK on the CPU: steps, annotations, metrics, a torch trace
        assert run.returncode == 0, run.output
        jobs.ids["sdk-cpu"] = run.job_id
        for name, job_id in jobs.ids.items():
            if name == "still-running":
                continue
            job = stack.wait_for_job(jobs.token, job_id)
            assert job["status"] == ("Failed" if name == "broken" else "Ready"), job["failure_reason"]
        jobs.app_id = jobs.start_app(stack)
        return jobs

    def start_app(self, stack: JobStack) -> str:
        apps = f"{stack.url}/api/v1/domains/{DOMAIN}/users/{USER}/apps"
        created = httpx.post(
            apps, json={"app_type": "DetailedProfiler"}, headers=auth(self.token), timeout=30
        )
        assert created.status_code == 202, created.text

        def in_service() -> bool:
            answer = httpx.get(f"{apps}/DetailedProfiler/default", headers=auth(self.token), timeout=30)
            return bool(answer.json()["status"] == "InService")

        wait_for(in_service, "the profiler app InService", 180)
        return str(created.json()["app_id"])

    def presigned_url(self, stack: JobStack) -> str:
        answer = httpx.post(
            f"{stack.url}/api/v1/domains/{DOMAIN}/users/{USER}/apps/DetailedProfiler/default/presigned-url",
            headers=auth(self.token),
            timeout=30,
        )
        answer.raise_for_status()
        return str(answer.json()["url"])

    def api(self, stack: JobStack, path: str) -> Any:
        """The app's own JSON answer for ``path`` (through the proxy, with the user's token)."""
        answer = httpx.get(f"{stack.url}/apps/{self.app_id}/api/{path}", headers=auth(self.token), timeout=60)
        answer.raise_for_status()
        return answer.json()


@dataclass
class BrowserLog:
    """What went wrong in the browser while a test ran: console errors, failed or 4xx/5xx requests."""

    errors: list[str] = field(default_factory=list)

    def watch(self, page: Any) -> None:
        page.on("console", lambda m: m.type == "error" and self.errors.append(f"console: {m.text}"))
        page.on("pageerror", lambda e: self.errors.append(f"pageerror: {e}"))
        # ERR_ABORTED: the page navigated away while a request was in flight (not a failure)
        page.on(
            "requestfailed",
            lambda r: (
                "ERR_ABORTED" not in (r.failure or "") and self.errors.append(f"failed: {r.url} {r.failure}")
            ),
        )
        page.on(
            "response",
            lambda r: r.status >= 400 and self.errors.append(f"HTTP {r.status}: {r.url}"),
        )


class SharedChromium:
    """One headless Chromium for the whole e2e package (one per xdist worker), launched when a test
    first asks for it and stopped when the package's last test ends (``tests/e2e/conftest.py``):
    a launch costs ~2.5 s of wall, and fifteen modules launched their own. Tests stay apart through
    their own browser contexts (cookies, storage, pages), closed when each caller is done."""

    def __init__(self) -> None:
        self._playwright: Any = None
        self._browser: Any = None

    def get(self) -> Any:
        if self._browser is not None and not self._browser.is_connected():  # crashed: a fresh one
            self.close()
        if self._browser is None:
            self._playwright = _start_playwright()
            try:
                self._browser = _launch(self._playwright)
            except BaseException:
                self.close()
                raise
        return self._browser

    def close(self) -> None:
        # Playwright's sync API marks its event loop as running between calls, which would refuse
        # asyncio.run() in the tests after this package: it stops with the package.
        if self._browser is not None:
            if self._browser.is_connected():
                self._browser.close()
            self._browser = None
        if self._playwright is not None:
            self._playwright.stop()
            self._playwright = None


SHARED: list[SharedChromium] = []  # the package's SharedChromium while tests/e2e runs


def _start_playwright() -> Any:
    if not shutil.which(CHROMIUM):
        pytest.fail(f"{CHROMIUM} is missing: run infra/ensure-test-deps.sh (apt-get install chromium)")
    from playwright.sync_api import sync_playwright

    return sync_playwright().start()


def _launch(playwright: Any) -> Any:
    return playwright.chromium.launch(
        executable_path=CHROMIUM,
        args=["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"],
    )


def launch_browser() -> Iterator[Any]:
    """A headless Chromium for one fixture or test (``for browser in launch_browser(): ...``): the
    e2e package's shared one, whose contexts the caller opened are closed after it; outside the
    package, one of the caller's own."""
    if not SHARED:
        playwright = _start_playwright()
        try:
            chromium = _launch(playwright)
            yield chromium
            chromium.close()
        finally:
            playwright.stop()
        return
    chromium = SHARED[0].get()
    try:
        yield chromium
    finally:
        for context in list(chromium.contexts):
            context.close()


def shot_path(name: str) -> Path:
    """Where the screenshot ``name`` goes: outside the repository (``PROFILERHUB_TEST_SHOTS``)."""
    SHOTS.mkdir(parents=True, exist_ok=True)
    return SHOTS / f"{name}.png"


def shot(page: Any, name: str) -> Path:
    """Save a full-page screenshot outside the repository (a test artefact to look at)."""
    path = shot_path(name)
    page.screenshot(path=str(path), full_page=True)
    return path
