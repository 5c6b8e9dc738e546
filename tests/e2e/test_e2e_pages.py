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
from tests.support.hub import auth, wait_for

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


def analyze(path: Any) -> dict[str, Any]:
    """``profilerhub analyze --format json`` of one trace, run as the CLI a user would."""
    import json
    import subprocess

    from tests.support.hub import cli_command

    done = subprocess.run(
        [*cli_command(), "analyze", "--format", "json", str(path)], capture_output=True, check=True
    )
    return dict(json.loads(done.stdout))


def span(app: Any) -> int:
    """The timeline's visible range in ns, as the page last drew it."""
    canvas = app.locator("#tl-canvas")
    return int(canvas.get_attribute("data-end")) - int(canvas.get_attribute("data-start"))


def open_page(app: Any, path: str) -> None:
    app.goto(app.app_base + path)


def open_timeline(app: Any, job_id: str) -> Any:
    """Open a job's timeline and wait for its first drawn frame; the canvas."""
    open_page(app, f"jobs/{job_id}/timeline")
    app.wait_for_selector("#tl-view[data-ready='true']")
    canvas = app.locator("#tl-canvas")
    wait_for(lambda: int(canvas.get_attribute("data-drawn") or 0) > 0, "events drawn", 30)
    return canvas


def table_of(app: Any, panel: str) -> Any:
    """Open a panel's table view (its text alternative) and return the table's body rows."""
    app.click(f"#{panel} .table-toggle")
    expect(app.locator(f"#{panel} .table-view table")).to_be_visible()
    return app.locator(f"#{panel} .table-view tbody tr")


# Panels each of these jobs must show with data (the rest say why they are empty).
GPU_PANELS = [
    "gpu-active", "cpu-active", "gpu-util", "cpu-util", "kernel-time", "kernel-time-15", "launch-counts",
    "launch-counts-15", "precision", "gpu-activity", "memory-ops", "annotations", "launch-latency", "idle",
    "temporal", "memory-bw", "cpu-ops", "launch-stats", "queue-length", "gpu-metrics",
]  # fmt: skip


def test_the_dashboard_shows_every_panel_with_the_numbers_of_profilerhub_analyze(
    app: Any, jobs: PagesJobs
) -> None:
    from tests.e2e.pages_stack import TRACE_JOBS

    expected = analyze(TRACE_JOBS["alexnet"][0])
    open_page(app, f"jobs/{jobs.ids['alexnet']}")
    app.wait_for_selector("#panels[data-ready='true']")
    for panel in GPU_PANELS:
        expect(app.locator(f"#{panel}")).to_have_attribute("data-empty", "false")
    expect(app.locator("#gpu-util canvas").first).to_be_visible()
    shot(app, "dashboard")

    kernels = table_of(app, "kernel-time-15")
    top = expected["kernels"][:15]
    for i, kernel in enumerate(top):
        cells = kernels.nth(i).locator("td")
        assert cells.nth(0).inner_text() == kernel["name"]
        assert int(cells.nth(1).get_attribute("data-raw")) == kernel["count"]
        assert float(cells.nth(2).get_attribute("data-raw")) == pytest.approx(kernel["total_us"])
    precision = {r["precision"]: r for r in expected["precision"]}
    rows = table_of(app, "precision")
    assert rows.count() == len(precision)
    for i in range(rows.count()):
        name = rows.nth(i).locator("td").nth(0).inner_text()
        assert float(rows.nth(i).locator("td").nth(2).get_attribute("data-raw")) == pytest.approx(
            precision[name]["total_us"]
        )
    temporal = table_of(app, "temporal").first.locator("td")
    assert float(temporal.nth(1).get_attribute("data-raw")) == pytest.approx(
        expected["temporal"][0]["compute_us"]
    )
    assert str(expected["launch_latency"]["count"]) in app.locator("#launch-latency .note").inner_text()

    # top k is adjustable: k = 3 keeps three kernels and folds the rest into "other".
    app.fill("#kernel-time-k", "3")
    app.press("#kernel-time-k", "Enter")
    app.wait_for_url("**top=3**")
    app.wait_for_selector("#panels[data-top='3']")
    bars = app.locator("#kernel-time .bars .label")
    expect(bars).to_have_count(4)
    assert bars.nth(3).inner_text().startswith(f"other ({expected['distinct_kernels'] - 3} kernels)")


def test_a_multi_rank_job_has_a_rank_picker_and_ranks_side_by_side(app: Any, jobs: PagesJobs) -> None:
    open_page(app, f"jobs/{jobs.ids['two-ranks']}")
    app.wait_for_selector("#panels[data-ready='true']")
    expect(app.locator("#ranks tbody tr")).to_have_count(2)
    expect(app.locator("#steps")).to_have_attribute("data-empty", "false")
    app.select_option("#rank-select", "1")
    app.wait_for_selector("#panels[data-trace='1']")
    assert "trace=1" in app.url
    download = app.locator("#download").get_attribute("href")
    assert download.endswith("/traces/1/raw")
    raw = app.request.get(app.app_base.split("/apps/")[0] + download)
    assert raw.status == 200 and raw.body()[:2] == b"\x1f\x8b"  # gzip, for Perfetto
    shot(app, "dashboard-ranks")


def test_the_sdk_jobs_dashboard_shows_its_training_and_system_metrics(app: Any, jobs: PagesJobs) -> None:
    open_page(app, f"jobs/{jobs.ids['sdk-cpu']}")
    app.wait_for_selector("#panels[data-ready='true']")
    for panel in ("metrics", "system", "cpu-active", "cpu-ops", "annotations"):
        expect(app.locator(f"#{panel}")).to_have_attribute("data-empty", "false")
    expect(app.locator("#gpu-active")).to_have_attribute("data-empty", "true")  # a CPU-only run
    assert "train:loss" in app.locator("#metrics").inner_text()
    expect(app.locator("[data-fact='steps']")).to_have_text("6")  # the run's steps, as the jobs list says
    shot(app, "dashboard-sdk")


def test_a_dashboard_opened_while_the_job_runs_turns_into_the_full_one(
    app: Any, jobs: PagesJobs, pages_stack: JobStack
) -> None:
    from tests.e2e.pages_stack import TRACE_JOBS

    with httpx.Client(base_url=pages_stack.url, headers=auth(jobs.token), timeout=60) as http:
        job_id = http.post(jobs.jobs_url, json={"name": "live"}).json()["job_id"]
        path = TRACE_JOBS["compare-test"][0]
        assert (
            http.put(
                f"{jobs.jobs_url}/{job_id}/files/torch/{path.name}", content=path.read_bytes()
            ).status_code
            == 201
        )
        open_page(app, f"jobs/{job_id}")
        expect(app.locator("#job-live")).to_contain_text("InProgress")
        assert http.post(f"{jobs.jobs_url}/{job_id}/complete").status_code == 202
    app.wait_for_selector("#panels[data-ready='true']", timeout=90_000)  # no reload
    expect(app.locator("#kernel-time")).to_have_attribute("data-empty", "false")


def test_the_timeline_draws_lanes_zooms_finds_a_kernel_and_shows_its_launch(
    app: Any, jobs: PagesJobs
) -> None:
    canvas = open_timeline(app, jobs.ids["alexnet"])
    assert "GPU 0" in app.locator("#lane-tree").inner_text()
    start, end = int(canvas.get_attribute("data-start")), int(canvas.get_attribute("data-end"))

    app.focus("#tl-view")
    app.keyboard.press("w")  # zoom in
    wait_for(lambda: span(app) < end - start, "the view zoomed in", 30)
    app.mouse.move(700, 400)
    app.mouse.wheel(0, 600)  # zoom out at the cursor
    app.keyboard.press("f")  # fit: the whole trace again
    wait_for(lambda: span(app) >= end - start, "the view fitted to the trace", 30)

    app.fill("#tl-query", "sgemm")
    app.press("#tl-query", "Enter")
    expect(app.locator("#tl-matches")).to_have_text("1 of 6")
    expect(app.locator("#sel-name")).to_contain_text("sgemm")
    expect(app.locator("#sel-launch")).to_contain_text("cudaLaunchKernel")
    app.click("#tl-next")
    expect(app.locator("#tl-matches")).to_have_text("2 of 6")
    shot(app, "timeline")

    # Clicking the kernel on the canvas selects it and shows the call that launched it.
    wait_for(lambda: bool(canvas.get_attribute("data-sel-rect")), "the selection drawn", 30)
    x, y, w, h = (int(v) for v in canvas.get_attribute("data-sel-rect").split(","))
    name = app.locator("#sel-name").inner_text()
    app.focus("#tl-view")
    app.keyboard.press("Escape")
    expect(app.locator("#sel-name")).to_have_count(0)
    box = app.locator("#tl-view").bounding_box()
    app.mouse.click(box["x"] + x + w / 2, box["y"] + y + h / 2)
    expect(app.locator("#sel-name")).to_have_text(name)
    expect(app.locator("#sel-launch")).to_contain_text("cudaLaunchKernel")

    # The launch's own panel lists the kernel it launched (the link both ways).
    app.click("#sel-launch button")
    expect(app.locator("#sel-name")).to_have_text("cudaLaunchKernel")
    expect(app.locator("#sel-launched")).to_contain_text(name[:20])


def test_the_timeline_url_restores_the_view_and_selection(app: Any, jobs: PagesJobs) -> None:
    open_page(app, f"jobs/{jobs.ids['alexnet']}/timeline")
    app.wait_for_selector("#tl-view[data-ready='true']")
    app.fill("#tl-query", "sgemm")
    app.press("#tl-query", "Enter")
    expect(app.locator("#sel-launch")).to_be_visible()
    app.click("[data-toggle='host-2869224']")  # collapse the host group
    app.wait_for_url("**collapsed=host-2869224**")
    app.wait_for_url("**sel=**")
    shared = app.url
    canvas = app.locator("#tl-canvas")
    before = (
        canvas.get_attribute("data-start"),
        canvas.get_attribute("data-end"),
        app.locator("#sel-name").inner_text(),
    )

    other = app.context.new_page()
    other.goto(shared)
    other.wait_for_selector("#tl-view[data-ready='true']")
    expect(other.locator("#sel-name")).to_have_text(before[2])
    again = other.locator("#tl-canvas")
    assert (again.get_attribute("data-start"), again.get_attribute("data-end")) == before[:2]
    expect(other.locator("[data-toggle='host-2869224']")).to_have_attribute("aria-expanded", "false")
    expect(other.locator("#tl-matches")).to_have_text("1 of 6")
    other.close()


def lane_rows(app: Any) -> list[int]:
    """Lane ids in the order the canvas lays them out, top to bottom."""
    rows = "window.__timeline.state.layout.rows"
    return app.evaluate(f"() => {rows}.filter((r) => r.type === 'lane').map((r) => r.lane.lane_id)")  # type: ignore[no-any-return]


def test_lanes_reorder_by_drag_and_by_keyboard_and_the_url_keeps_the_order(app: Any, jobs: PagesJobs) -> None:
    open_page(app, f"jobs/{jobs.ids['alexnet']}/timeline")
    app.wait_for_selector("#tl-view[data-ready='true']")
    gpu = app.locator("[data-group='gpu-0'] li[data-lane]")
    first, _, last = (int(gpu.nth(i).get_attribute("data-lane")) for i in range(3))
    # Drag the GPU's last stream onto the top half of its first: it moves above it.
    gpu.nth(2).drag_to(gpu.nth(0), target_position={"x": 20, "y": 2})
    above = lambda: lane_rows(app).index(last) < lane_rows(app).index(first)  # noqa: E731
    wait_for(above, "the dragged lane moved up", 30)
    # Alt+↓ on a focused lane moves it one down.
    app.focus(f"[data-lane='{last}'] input")
    app.keyboard.press("Alt+ArrowDown")
    wait_for(lambda: not above(), "Alt+↓ moved the lane down", 30)
    expect(app.locator(f"[data-lane='{last}'] input")).to_be_focused()
    # Groups too: drag "Other" above the host.
    app.locator("[data-group^='other'] .lane-group").drag_to(
        app.locator("[data-group^='host'] .lane-group"), target_position={"x": 20, "y": 2}
    )
    app.wait_for_url("**order=other**")
    app.wait_for_url("**lane_order=**")
    rows, shared = lane_rows(app), app.url
    shot(app, "timeline-reordered")

    other = app.context.new_page()
    other.goto(shared)
    other.wait_for_selector("#tl-view[data-ready='true']")
    assert lane_rows(other) == rows
    top = other.locator(".lane-tree > li").first.get_attribute("data-group")
    assert top is not None and top.startswith("other")
    other.close()


def test_a_zoom_draws_the_cached_view_at_once_and_refines_when_its_answer_lands(
    app: Any, jobs: PagesJobs
) -> None:
    canvas = open_timeline(app, jobs.ids["alexnet"])
    coarse = float(canvas.get_attribute("data-res"))
    held: list[Any] = []
    released: list[bool] = []

    def hold(route: Any) -> None:  # window answers wait until the test releases them
        if released:
            route.continue_()
        else:
            held.append(route)

    app.route("**/timeline/window?**", hold)
    app.focus("#tl-view")
    for _ in range(6):
        app.keyboard.press("w")  # 0.7^6: the view is 8x narrower, too fine for the overview
    wait_for(lambda: bool(app.evaluate("() => true")) and len(held) > 0, "a finer window asked for", 30)
    assert int(canvas.get_attribute("data-drawn") or 0) > 0  # drawn at once from the cache
    assert float(canvas.get_attribute("data-res")) == coarse
    assert canvas.get_attribute("data-complete") == "false"
    released.append(True)
    for route in held:
        route.continue_()
    wait_for(lambda: canvas.get_attribute("data-complete") == "true", "the refined frame", 30)
    assert float(canvas.get_attribute("data-res")) < coarse


def test_the_sdk_jobs_timeline_has_a_lane_of_its_annotations_and_steps(app: Any, jobs: PagesJobs) -> None:
    open_page(app, f"jobs/{jobs.ids['sdk-cpu']}/timeline")
    app.wait_for_selector("#tl-view[data-ready='true']")
    expect(app.locator("#lane-tree")).to_contain_text("SDK annotations")
    app.fill("#tl-query", "step_3")
    app.press("#tl-query", "Enter")
    expect(app.locator("#sel-name")).to_have_text("step_3")
    expect(app.locator("#tl-details")).to_contain_text("sdk_step")
    expect(app.locator("#tl-details")).to_contain_text("SDK annotations")
    shot(app, "timeline-sdk")


def test_a_kernel_on_the_dashboard_opens_the_timeline_at_it(app: Any, jobs: PagesJobs) -> None:
    open_page(app, f"jobs/{jobs.ids['alexnet']}")
    app.wait_for_selector("#panels[data-ready='true']")
    first = app.locator("#kernel-time-15 .bars a.label").first
    name = first.inner_text()
    first.click()
    app.wait_for_selector("#tl-view[data-ready='true']")
    expect(app.locator("#sel-name")).to_have_text(name)
    expect(app.locator("#tl-matches")).to_contain_text("1 of")


def test_compare_shows_two_jobs_with_their_deltas(app: Any, jobs: PagesJobs, pages_stack: JobStack) -> None:
    app.wait_for_selector("#jobs tbody tr")
    for name in ("compare-base", "compare-test"):
        row(app, jobs.ids[name]).locator("input[type=checkbox]").check()
    app.click("#compare-selected")
    app.wait_for_selector("#compare-body[data-ready='true']")
    expected = jobs.api(
        pages_stack, f"compare?base={jobs.ids['compare-base']}&test={jobs.ids['compare-test']}"
    )
    kernel_count = next(r for r in expected["compare"]["summary"] if r["metric"] == "kernel_count")
    assert kernel_count["diff"] != 0
    launches = app.locator("#compare-body tr", has_text="kernel launches")
    expect(launches.locator(".delta-better, .delta-worse")).to_contain_text(f"{abs(kernel_count['diff'])}")
    assert app.locator("#cmp-added").inner_text() == str(len(expected["compare"]["added"]))
    shot(app, "compare")
