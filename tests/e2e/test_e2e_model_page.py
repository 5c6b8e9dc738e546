"""The Model page in a real headless Chromium: a running job whose SDK has streamed tensor chunks
(weights, gradients of a vanishing first layer, train and eval losses) opened in its owner's
profiler app: the losses by mode, the per-layer heat map drawn on its canvas, a click on a cell
that shows that tensor's series and histogram over steps, the keyboard reaching the map, every
chart's table view, a second job's gradient norm beside this one's; no console error, no failed
request."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest

from profilerhub_analysis.tensor_records import record
from tests.e2e.jobs_stack import JobStack
from tests.e2e.pages_stack import DOMAIN, USER, BrowserLog, PagesJobs, launch_browser, shot
from tests.support.hub import auth
from tests.support.jobs import jsonl_gz

pytestmark = pytest.mark.slow
LAYERS = ("layers.0.weight", "layers.1.weight", "layers.2.weight", "layers.3.weight")


def tensor_chunk(steps: range) -> bytes:
    """What ph.watch streams: four layers' weights and gradients (layer 0's fading to 1e-9 from
    step 20), the train loss every step and an eval loss every 10 steps."""
    rng = np.random.default_rng(steps.start)
    records = []
    for s in steps:
        tensors: dict[str, np.ndarray] = {}
        for i, layer in enumerate(LAYERS):
            scale = 1e-9 if i == 0 and s >= 20 else 0.01 * (i + 1)
            tensors[f"weights/{layer}"] = rng.standard_normal((16, 16)) * 0.1
            tensors[f"gradients/{layer}"] = rng.standard_normal((16, 16)) * scale
        tensors["losses/loss"] = np.array(2.0 * np.exp(-s / 20) + 0.1)
        records.append(record("train", s, tensors))
        if s % 10 == 9:
            records.append(
                record("eval", s // 10, {"losses/loss": np.array(2.0 * np.exp(-s / 25) + 0.2)}, global_step=s)
            )
    return jsonl_gz(records)


@pytest.fixture
def watched_job(tmp_path: Path, redis_url: str) -> Iterator[tuple[JobStack, PagesJobs, str, str]]:
    stack = JobStack.start(tmp_path, redis_url)
    try:
        jobs = PagesJobs(stack.user_token(DOMAIN, USER))
        with httpx.Client(base_url=stack.url, headers=auth(jobs.token), timeout=60) as http:
            job_id = http.post(jobs.jobs_url, json={"name": "watched"}).json()["job_id"]
            for i, part in enumerate((range(0, 30), range(30, 60))):
                url = f"{jobs.jobs_url}/{job_id}/files/tensors/{i:06d}.jsonl.gz"
                assert http.put(url, content=tensor_chunk(part)).status_code == 201
            other = http.post(jobs.jobs_url, json={"name": "baseline"}).json()["job_id"]
            url = f"{jobs.jobs_url}/{other}/files/tensors/000000.jsonl.gz"
            assert http.put(url, content=tensor_chunk(range(0, 20))).status_code == 201
        jobs.app_id = jobs.start_app(stack)
        yield stack, jobs, job_id, other
    finally:
        stack.stop()


def test_the_model_page_draws_the_heat_map_and_a_cell_click_shows_that_tensors_series(
    watched_job: tuple[JobStack, PagesJobs, str, str],
) -> None:
    stack, jobs, job_id, other = watched_job
    for browser in launch_browser():
        page: Any = browser.new_context(viewport={"width": 1400, "height": 1000}).new_page()
        log = BrowserLog()
        log.watch(page)
        page.goto(jobs.presigned_url(stack))
        page.goto(f"{stack.url}/apps/{jobs.app_id}/jobs/{job_id}/model")
        page.wait_for_selector("#model-panels[data-ready='true']", timeout=90_000)  # a loaded machine is slow
        page.wait_for_selector("#p-heat .chart[data-drawn='true'] canvas.heat")
        assert page.locator("#m-collection").input_value() == "gradients"
        assert "live" in page.locator("#model-live").inner_text()
        # the canvas holds colour: sample the cells' pixels (not the background)
        coloured = page.evaluate(
            """() => { const c = document.querySelector('#p-heat canvas.heat');
                 const d = c.getContext('2d').getImageData(c.width / 2, 2, c.width / 2 - 4, 4).data;
                 let n = 0; for (let i = 0; i < d.length; i += 4) if (d[i + 3] > 0 && d[i] !== d[i + 2]) n++;
                 return n; }"""
        )
        assert coloured > 100
        canvas = page.locator("#p-heat canvas.heat")
        box = canvas.bounding_box()
        # row 0 (layers.0.weight, the vanishing one), a column near the end
        canvas.click(position={"x": box["width"] - 10, "y": 5})
        page.wait_for_selector("#p-series[data-tensor='gradients/layers.0.weight'] .chart[data-drawn='true']")
        assert "gradients/layers.0.weight" in page.locator("#p-series h2").inner_text()
        assert page.locator("#p-heat .heat-readout").inner_text().endswith("e-8")  # the vanished layer
        page.wait_for_selector("#p-hist canvas.heat")
        # the keyboard reaches the map: focus it, move down a row, Enter opens that tensor
        canvas.focus()
        page.keyboard.press("ArrowDown")
        readout = page.locator("#p-heat .heat-readout")
        assert readout.inner_text().startswith("gradients/layers.1.weight"), readout.inner_text()
        # the run streams more steps: the live refresh redraws the map, and keeps its cell and focus
        page.evaluate("() => { window.__heat = document.querySelector('#p-heat canvas.heat'); }")
        with httpx.Client(base_url=stack.url, headers=auth(jobs.token), timeout=60) as http:
            url = f"{jobs.jobs_url}/{job_id}/files/tensors/000002.jsonl.gz"
            assert http.put(url, content=tensor_chunk(range(60, 70))).status_code == 201
        page.wait_for_function(
            "() => { const c = document.querySelector('#p-heat canvas.heat');"
            " return c !== null && c !== window.__heat && document.activeElement === c; }",
            timeout=90_000,
        )
        assert readout.inner_text().startswith("gradients/layers.1.weight"), readout.inner_text()
        page.keyboard.press("Enter")
        page.wait_for_selector("#p-series[data-tensor='gradients/layers.1.weight']")
        # losses: train and eval on one chart; its table view has both columns
        page.locator("#p-losses .table-toggle").click()
        head = page.locator("#p-losses .table-view th").all_inner_texts()
        assert head == ["step", "loss (train)", "loss (eval)"]
        page.locator("#p-losses .table-toggle").click()
        page.locator("#p-heat .table-toggle").click()
        assert page.locator("#p-heat .table-view tr").count() > 30
        page.locator("#p-heat .table-toggle").click()
        # two jobs' global gradient norms on one chart
        page.locator("#compare-job").select_option(other)
        page.wait_for_selector("#p-compare .chart[data-drawn='true'] canvas")
        page.locator("#p-compare .table-toggle").click()
        assert page.locator("#p-compare .table-view th").all_inner_texts() == ["step", "this job", "baseline"]
        page.locator("#p-compare .table-toggle").click()
        path = shot(page, "model-page")
        assert path.stat().st_size > 10_000
        assert log.errors == []
