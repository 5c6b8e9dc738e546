"""The profiler app's pages in a real headless Chromium, against a running hub, worker and app,
with real traces uploaded as jobs (``pages_stack``): what a data scientist sees and does.

Every test opens the app through a presigned URL (the hub's cookie path) and fails on any
console error, uncaught exception or failed request. Screenshots land in /tmp/ui-shots/.
"""

from __future__ import annotations

import gzip
import json
import re
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from playwright.sync_api import expect

from tests.e2e.jobs_stack import JobStack
from tests.e2e.pages_stack import BrowserLog, PagesJobs, launch_browser, shot, shot_path
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


def test_the_jobs_page_lists_every_job_with_its_status_and_figures(
    app: Any, jobs: PagesJobs, pages_stack: JobStack
) -> None:
    app.wait_for_selector("#jobs tbody tr")
    for name in ("alexnet", "two-ranks", "compare-base", "compare-test", "sdk-cpu"):
        assert row(app, jobs.ids[name]).locator(".status").inner_text() == "Ready"
    assert row(app, jobs.ids["broken"]).locator(".status").inner_text() == "Failed"
    assert "gzip data is truncated" in row(app, jobs.ids["broken"]).locator(".reason").inner_text()
    two = row(app, jobs.ids["two-ranks"]).locator("td")
    assert two.nth(8).inner_text() == "2"  # ranks
    assert row(app, jobs.ids["sdk-cpu"]).locator("td").nth(6).inner_text() == "6"  # steps
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
    expect(app.locator("th[aria-sort='ascending'] button[data-sort='name']")).to_have_count(1)
    names = app.locator("#jobs tbody td.name a, #jobs tbody td.name:not(:has(a))").all_inner_texts()
    firsts = [n.splitlines()[0] for n in names]
    assert firsts == sorted(firsts)

    # Duration sorts in the hub (a column of the job row): largest first, then smallest first,
    # the jobs without one (the Failed job) last both times
    items = jobs.api(pages_stack, "jobs?limit=1000")["items"]
    assert any(j["duration_s"] is None for j in items) and any(j["duration_s"] for j in items)
    for direction in ("descending", "ascending"):
        app.click("th button[data-sort='duration_s']")
        expect(app.locator(f"th[aria-sort='{direction}'] button[data-sort='duration_s']")).to_have_count(1)
        assert "sort=duration_s" in app.url
        desc = direction == "descending"
        timed = sorted(
            (j for j in items if j["duration_s"] is not None),
            key=lambda j: (j["duration_s"], j["job_id"]),
            reverse=desc,
        )
        untimed = sorted(
            (j for j in items if j["duration_s"] is None), key=lambda j: j["job_id"], reverse=desc
        )
        expected = [j["job_id"] for j in timed + untimed]
        shown = app.locator("#jobs tbody tr")
        expect(shown.first).to_have_attribute("data-job", expected[0])
        order = [shown.nth(i).get_attribute("data-job") for i in range(shown.count())]
        assert order == expected[: len(order)]


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


def test_a_multi_rank_job_has_a_rank_picker_and_ranks_side_by_side(
    app: Any, jobs: PagesJobs, pages_stack: JobStack
) -> None:
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
    assert "traceEvents" in json.loads(gzip.decompress(raw.body()))  # Chrome-trace JSON

    # The per-rank table: the straggler is marked in words and a glyph, not colour alone; a
    # click on a rank shows its panels; one link compares it with the fastest rank.
    ranks = app.locator("#ranks")
    expected = jobs.api(pages_stack, f"jobs/{jobs.ids['two-ranks']}/ranks")
    for straggler in expected["stragglers"]["stragglers"]:
        expect(ranks.locator("tr.straggler")).to_contain_text(f"⚠ {straggler['rank']}")
    expect(ranks.locator(".note")).to_contain_text("Stragglers")
    ranks.locator("button.rank-pick").first.click()
    app.wait_for_selector("#panels[data-trace='0']")
    expect(app.locator("#rank-select")).to_have_value("0")
    href = app.locator("#compare-ranks").get_attribute("href")
    assert f"base={jobs.ids['two-ranks']}" in href and "test_trace=" in href
    ranks.screenshot(path=str(shot_path("dashboard-ranks-table")))
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


def test_a_real_sdk_run_streams_into_its_dashboard_which_then_turns_into_the_full_one(
    app: Any, jobs: PagesJobs, pages_stack: JobStack
) -> None:
    """The SDK's training script, paused at step 4 (after chunks of steps 0-3 went up): the
    dashboard shows its steps, metrics and system samples so far, redraws as more arrive, and
    turns into the Ready dashboard without a reload when the run ends and ingest finishes."""
    from tests.e2e.jobs_stack import wait_for_file

    gate = pages_stack.tmp / "live-gate"
    seen: dict[str, Any] = {}

    def running_job_id() -> str | None:
        listed = httpx.get(
            f"{pages_stack.url}{jobs.jobs_url}", headers=auth(jobs.token), params={"limit": 100}, timeout=30
        ).json()["items"]
        mine = [j for j in listed if j["name"] == "mlp-e2e" and j["status"] == "InProgress"]
        return str(mine[0]["job_id"]) if mine else None

    def while_paused() -> None:
        wait_for_file(gate.with_suffix(".reached"))
        job_id = running_job_id()
        assert job_id is not None
        seen["job_id"] = job_id
        open_page(app, f"jobs/{job_id}")
        app.evaluate("window.__notReloaded = true")
        expect(app.locator("#panels")).to_have_attribute("data-live", "true")
        # the chunks of steps 0-3 arrive (the SDK uploads every 0.5 s); the page redraws itself
        wait_for(
            lambda: int(app.locator("#panels").get_attribute("data-live-steps") or 0) >= 4, "4 steps live", 60
        )
        expect(app.locator("#metrics")).to_have_attribute("data-empty", "false")
        expect(app.locator("#system")).to_have_attribute("data-empty", "false")
        expect(app.locator("#step-time")).to_have_attribute("data-empty", "false")
        expect(app.locator("#job-live")).to_contain_text("InProgress")
        assert "train:loss" in app.locator("#metrics").inner_text()
        rows = table_of(app, "step-time")
        assert rows.count() >= 4
        shot(app, "dashboard-live")
        gate.with_suffix(".go").touch()

    run = pages_stack.train(jobs.token, 8, env={"GATES": f"4:{gate}"}, on_output=while_paused)
    assert run.returncode == 0, run.output
    assert run.job_id == seen["job_id"]
    app.wait_for_selector("#panels[data-ready='true']", timeout=120_000)  # ingest done: the full dashboard
    assert app.evaluate("window.__notReloaded") is True
    expect(app.locator("[data-fact='steps']")).to_have_text("8")
    expect(app.locator("#cpu-ops")).to_have_attribute("data-empty", "false")


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

    # Both timelines, one above the other, start at the chosen step and span the same width.
    app.locator("#cmp-timelines").scroll_into_view_if_needed()
    for side in ("base", "test"):
        frame = app.frame_locator(f"#cmp-tl-{side}")
        # a whole timeline page loading in a frame: more than expect's default 5 s on a busy machine
        expect(frame.locator("#tl-view[data-ready='true']")).to_have_count(1, timeout=60_000)
        canvas = frame.locator("#tl-canvas")
        wait_for(lambda c=canvas: int(c.get_attribute("data-drawn") or 0) > 0, f"{side} timeline drawn", 30)
        iframe = app.locator(f"#cmp-tl-{side}")
        start, end = int(canvas.get_attribute("data-start")), int(canvas.get_attribute("data-end"))
        assert abs(start - int(iframe.get_attribute("data-start"))) <= 1
        assert abs((end - start) - int(iframe.get_attribute("data-width"))) <= 2
    app.locator("#cmp-timelines").screenshot(path=str(shot_path("compare-timelines")))
    shot(app, "compare")


def test_compare_two_ranks_of_one_job(app: Any, jobs: PagesJobs, pages_stack: JobStack) -> None:
    two = jobs.ids["two-ranks"]
    open_page(app, f"compare?base={two}&test={two}&base_trace=0&test_trace=1")
    app.wait_for_selector("#compare-body[data-ready='true']")
    expect(app.locator("#cmp-base-rank")).to_have_value("0")
    expect(app.locator("#cmp-test-rank")).to_have_value("1")
    expected = jobs.api(pages_stack, f"compare?base={two}&test={two}&base_trace=0&test_trace=1")["compare"]
    step = next(r for r in expected["summary"] if r["metric"] == "step_time_us")
    row_text = app.locator("#compare-body tr", has_text="step time").first.inner_text()
    assert "rank 0" in app.locator("#compare-body thead").first.inner_text()
    assert (step["diff"] == 0) == ("no change" in row_text)
    app.locator("#cmp-tl-test").scroll_into_view_if_needed()  # the frames load when in view
    expect(app.frame_locator("#cmp-tl-test").locator("#tl-view[data-ready='true']")).to_have_count(
        1, timeout=60_000
    )
    shot(app, "compare-ranks")


def _tab_to(app: Any, selector: str, presses: int = 60) -> dict[str, Any]:
    """Press Tab until ``selector`` has the focus; its focus ring as the browser draws it."""
    for _ in range(presses):
        app.keyboard.press("Tab")
        if app.evaluate("(s) => document.activeElement.matches(s)", selector):
            ring: dict[str, Any] = app.evaluate(
                "() => { const s = getComputedStyle(document.activeElement);"
                " return {style: s.outlineStyle, width: parseFloat(s.outlineWidth)}; }"
            )
            return ring
    raise AssertionError(f"{selector} is not reachable with Tab")


def test_controls_take_the_keyboard_focus_visibly_and_every_chart_has_a_table(
    app: Any, jobs: PagesJobs
) -> None:
    app.wait_for_selector("#jobs tbody tr")
    for selector in (
        "#filter-name",
        "#filter-status",
        "th button[data-sort='name']",
        "#jobs input[type=checkbox]",
    ):
        ring = _tab_to(app, selector)
        assert ring["style"] != "none" and ring["width"] >= 2, (selector, ring)
    app.keyboard.press("Space")  # ticks the focused job, by keyboard alone
    expect(app.locator("#compare-selected")).to_contain_text("(1/2)")

    open_page(app, f"jobs/{jobs.ids['alexnet']}")
    app.wait_for_selector("#panels[data-ready='true']")
    charts = app.locator(".panel:has(canvas), .panel:has(.bars), .panel:has(.stack)")
    assert charts.count() >= 10
    for i in range(charts.count()):
        chart = charts.nth(i)
        assert chart.locator(".table-toggle").count() == 1, chart.get_attribute("id")
    ring = _tab_to(app, "#kernel-time .table-toggle", 200)
    assert ring["style"] != "none"
    app.keyboard.press("Enter")  # the table view, by keyboard
    expect(app.locator("#kernel-time .table-view table")).to_be_visible()
    expect(app.locator("#kernel-time .table-toggle")).to_have_attribute("aria-pressed", "true")


def _insert_old_jobs(stack: JobStack, n: int) -> None:
    """``n`` jobs of alice straight into the stack's database (the fast path), older than every
    other job so the tests above see none of them: ``sweep-0000``…, every tenth Failed."""
    from datetime import UTC, datetime, timedelta

    import sqlalchemy as sa

    from profilerhub_core.db.models import Job, JobStatus, UserProfile, new_id

    engine = sa.create_engine(f"sqlite:///{stack.tmp / 'home' / 'profilerhub.db'}")
    with engine.begin() as db:
        owner = db.execute(
            sa.select(UserProfile.id, UserProfile.domain_id).where(UserProfile.name == "alice")
        ).one()
        t0 = datetime(2025, 1, 1, tzinfo=UTC)
        rows = [
            {
                "id": new_id(),
                "domain_id": owner.domain_id,
                "user_id": owner.id,
                "name": f"sweep-{i:04d}",
                "status": JobStatus.Failed if i % 10 == 0 else JobStatus.Ready,
                "failure_reason": "raw/torch/t.json: not valid JSON" if i % 10 == 0 else None,
                "metric_definitions": [],
                "created_at": t0 + timedelta(seconds=i),
                "updated_at": t0 + timedelta(seconds=i),
            }
            for i in range(n)
        ]
        db.execute(sa.insert(Job), rows)
    engine.dispose()


def test_the_jobs_page_pages_sorts_and_filters_thousands_of_jobs_in_the_hub(
    app: Any, jobs: PagesJobs, pages_stack: JobStack
) -> None:
    """Last in this module: it adds 3,000 jobs to alice's list."""
    n = 3000
    _insert_old_jobs(pages_stack, n)
    listed: list[str] = []
    app.on("request", lambda r: "/api/jobs?" in r.url and listed.append(r.url))
    open_page(app, "")
    hub = jobs.api(pages_stack, "jobs?limit=1")  # the other tests' jobs and these
    total, failed = hub["total"], hub["status_counts"]["Failed"]
    assert total >= n + len(jobs.ids) and failed >= n // 10 + 1
    expect(app.locator("#page-info")).to_have_text(f"Page 1 of {-(-total // 25)} · {total:,} jobs")
    expect(app.locator("#jobs tbody tr")).to_have_count(25)
    assert all("limit=25" in url for url in listed)  # one page asked for, never the whole list
    expect(app.locator("#filter-status option[value='Failed']")).to_have_text(f"Failed ({failed:,})")

    app.click("#page-next")
    expect(app.locator("#page-info")).to_contain_text("Page 2 of")
    app.click("#page-next")
    expect(app.locator("#page-info")).to_contain_text("Page 3 of")
    app.click("#page-prev")
    expect(app.locator("#page-info")).to_contain_text("Page 2 of")

    app.fill("#filter-name", "sweep-01")
    app.select_option("#filter-status", "Failed")
    expect(app.locator("#page-info")).to_have_text("Page 1 of 1 · 10 jobs")  # sweep-0100 … sweep-0190
    assert "q=sweep-01" in app.url and "status=Failed" in app.url
    reasons = app.locator("#jobs tbody .reason").all_inner_texts()
    assert len(reasons) == 10 and all("not valid JSON" in r for r in reasons)

    app.select_option("#filter-status", "")
    app.fill("#filter-name", "sweep")
    app.click("th button[data-sort='name']")
    expect(app.locator("th[aria-sort='ascending'] button[data-sort='name']")).to_have_count(1)
    expect(app.locator("#jobs tbody tr").first).to_contain_text("sweep-0000")
    app.select_option("#page-size", "100")
    expect(app.locator("#jobs tbody tr")).to_have_count(100)
    names = [t.splitlines()[0] for t in app.locator("#jobs tbody td.name").all_inner_texts()]
    assert names == [f"sweep-{i:04d}" for i in range(100)]
    app.click("#page-next")
    expect(app.locator("#jobs tbody tr").first).to_contain_text("sweep-0100")
    shot(app, "jobs-thousands")


def _views_rows(app: Any, panel: str) -> Any:
    return app.locator(f"#{panel} table tbody tr")


def _shown_total(app: Any, panel: str) -> int:
    """The 'N of M rows' line of a views table: M."""
    text = app.locator(f"#{panel} .table-tools span.muted").inner_text()
    return int(text.split(" of ")[1].split()[0].replace(",", ""))


def test_the_profile_views_show_the_plugins_operator_and_memory_tables_of_profilerhub_analyze(
    app: Any, jobs: PagesJobs
) -> None:
    from tests.e2e.pages_stack import TRACE_JOBS

    cli = analyze(TRACE_JOBS["mlp-cpu"][0])
    job = jobs.ids["mlp-cpu"]
    open_page(app, f"jobs/{job}")
    app.click("#open-views")  # the dashboard links the views
    app.wait_for_selector("#vw-average .stack")
    steps = cli["tb_overview"]["kept_steps"]
    expect(app.locator("#vw-steps .steps-rows .label")).to_have_count(steps)
    shot(app, "views-overview")

    app.click("#tab-operators")
    app.wait_for_selector("#vw-ops table tbody tr")
    assert "tab=operators" in app.url
    assert _shown_total(app, "vw-ops") == len(cli["tb_operators"])
    top = max(cli["tb_operators"], key=lambda r: r["host_self_us"])  # CPU-only: sorted by host self
    assert _views_rows(app, "vw-ops").first.locator("td").first.inner_text() == top["name"]
    app.click("#vw-ops th button[data-sort='calls']")
    most = max(r["calls"] for r in cli["tb_operators"])
    expect(_views_rows(app, "vw-ops").first.locator("td").nth(1)).to_have_text(f"{most:,}")
    app.fill("#vw-ops input[type=search]", "mm")
    names = _views_rows(app, "vw-ops").locator("td:first-child").all_inner_texts()
    assert names and all("mm" in n for n in names)
    assert len(names) == sum("mm" in r["name"] for r in cli["tb_operators"])
    app.fill("#vw-ops input[type=search]", "")
    app.select_option("#vw-group", "shape")
    expect(app.locator("#vw-ops th button[data-sort='input_shape']")).to_have_count(1)
    assert _shown_total(app, "vw-ops") == len(cli["tb_operators_by_shape"])
    shot(app, "views-operators")

    app.click("#tab-memory")
    app.wait_for_selector("#vw-memory table tbody tr")
    cpu_rows = [r for r in cli["tb_memory"] if r["device"] == "CPU"]
    assert _shown_total(app, "vw-memory") == len(cpu_rows)
    biggest = max(cpu_rows, key=lambda r: r["size_increase_bytes"])
    assert _views_rows(app, "vw-memory").first.locator("td").first.inner_text() == biggest["name"]
    curve = cli["tb_memory_curve"][0]
    app.wait_for_selector("#vw-mem-curve canvas")
    assert f"{curve['records']:,} allocation" in app.locator("#vw-mem-curve").inner_text()
    assert table_of(app, "vw-mem-curve").count() == len(curve["t_us"])
    events = [e for e in cli["tb_memory_events"]["events"] if e["device"] == "CPU"]
    assert _shown_total(app, "vw-mem-events") == len(events) > 0
    largest = max(events, key=lambda e: e["size_bytes"])
    first = _views_rows(app, "vw-mem-events").first.locator("td")
    assert int(float(first.nth(1).get_attribute("data-raw"))) == largest["size_bytes"]
    app.fill("#vw-mem-events input[type=search]", "addmm")  # its own search, not the operators table's
    addmm = sum(e["operator"] == "aten::addmm" for e in events)
    expect(_views_rows(app, "vw-mem-events")).to_have_count(addmm)
    assert _shown_total(app, "vw-memory") == len(cpu_rows)
    shot(app, "views-memory")

    app.click("#tab-operators")
    link = _views_rows(app, "vw-ops").first.locator("td a")
    name = link.inner_text()
    link.click()  # an operator opens its calls in the timeline
    app.wait_for_selector("#tl-view[data-ready='true']")
    assert app.locator("#tl-query").input_value() == name


def test_a_range_picked_on_the_memory_curve_filters_the_memory_tables(app: Any, jobs: PagesJobs) -> None:
    """A drag across the curve picks a range (the URL keeps it); typed ends give an exact one, whose
    per-operator table and events table equal what the test counts from `analyze`'s events."""
    from tests.e2e.pages_stack import TRACE_JOBS

    cli = analyze(TRACE_JOBS["mlp-cpu"][0])
    open_page(app, f"jobs/{jobs.ids['mlp-cpu']}/views?tab=memory")
    app.wait_for_selector("#vw-mem-curve canvas")
    over = app.locator("#vw-mem-curve .u-over")
    box = over.bounding_box()
    assert box is not None
    app.mouse.move(box["x"] + box["width"] * 0.2, box["y"] + box["height"] / 2)
    app.mouse.down()
    app.mouse.move(box["x"] + box["width"] * 0.6, box["y"] + box["height"] / 2, steps=5)
    app.mouse.up()
    app.wait_for_selector("#vw-mem-range table")
    assert "t0us=" in app.url and "t1us=" in app.url
    shot(app, "views-memory-range")

    curve = next(c for c in cli["tb_memory_curve"] if c["device"] == "CPU")
    first = curve["t_us"][0]
    span_ms = (curve["t_us"][-1] - first) / 1000
    lo_ms, hi_ms = round(span_ms * 0.25, 3), round(span_ms * 0.5, 3)
    app.fill("#vw-mem-from", str(lo_ms))
    app.fill("#vw-mem-to", str(hi_ms))
    app.click("#vw-mem-apply")
    lo, hi = round(first + lo_ms * 1000), round(first + hi_ms * 1000)
    expect(app.locator("#vw-mem-from")).to_have_value(str(lo_ms))
    assert f"t0us={lo}" in app.url and f"t1us={hi}" in app.url
    events = [e for e in cli["tb_memory_events"]["events"] if e["device"] == "CPU"]
    allocs = [e for e in events if e["alloc_us"] is not None and lo <= e["alloc_us"] < hi]
    frees = [e for e in events if e["free_us"] is not None and lo <= e["free_us"] < hi]
    status = app.locator("#vw-mem-range .vw-range").inner_text()
    assert f"{len(allocs):,} allocations and {len(frees):,} frees in the range" in status
    operators = {e["operator"] or "(no operator)" for e in allocs + frees}
    assert _shown_total(app, "vw-mem-range") == len(operators)
    alive = [e for e in events if (e["alloc_us"] if e["alloc_us"] is not None else -1e30) < hi
             and (e["free_us"] if e["free_us"] is not None else 1e30) >= lo]  # fmt: skip
    assert _shown_total(app, "vw-mem-events") == len(alive)
    app.click("#tab-operators")  # the Operators tab follows the same range
    expect(app.locator("#vw-range")).to_contain_text("calls")
    app.click("#tab-memory")
    app.click("#vw-mem-clear")
    expect(app.locator("#vw-mem-range")).to_have_count(0)
    assert "t0us" not in app.url
    assert _shown_total(app, "vw-mem-events") == len(events)


def test_the_profile_views_show_the_kernels_with_launch_figures_and_the_gpu_summary(
    app: Any, jobs: PagesJobs
) -> None:
    from tests.e2e.pages_stack import TRACE_JOBS

    cli = analyze(TRACE_JOBS["alexnet"][0])
    open_page(app, f"jobs/{jobs.ids['alexnet']}/views?tab=kernels")
    app.wait_for_selector("#vw-kernels table tbody tr")
    assert _shown_total(app, "vw-kernels") == len(cli["tb_kernels"])
    first = _views_rows(app, "vw-kernels").first.locator("td")
    assert first.first.inner_text() == cli["tb_kernels"][0]["name"]  # largest total first
    app.select_option("#vw-group", "op")
    expect(app.locator("#vw-kernels th button[data-sort='operator']")).to_have_count(1)
    assert _shown_total(app, "vw-kernels") == len(cli["tb_kernels_by_op"])
    assert table_of(app, "vw-tc").count() == 2
    shot(app, "views-kernels")
    app.click("#tab-overview")
    app.wait_for_selector("#vw-gpu .kpis")
    gpu = cli["tb_gpu_summary"][0]
    assert f"{gpu['achieved_occupancy_pct']:.1f}" in app.locator("#vw-gpu").inner_text()
    app.keyboard.press("ArrowRight")  # the tabs take the arrow keys
    expect(app.locator("#tab-operators")).to_have_attribute("aria-selected", "true")


def test_a_recommendation_on_the_overview_links_to_its_evidence(app: Any, jobs: PagesJobs) -> None:
    """This trace's GPU has tensor cores no kernel used: the overview says so, as the rule does, and
    its link opens the Kernels tab."""
    from profilerhub_analysis.rules.tb_recommendations import brief, recommend
    from tests.e2e.pages_stack import TRACE_JOBS

    expected = recommend(brief(analyze(TRACE_JOBS["event-sync"][0])))
    assert [r["rule"] for r in expected] == ["TensorCoresUnused"]
    open_page(app, f"jobs/{jobs.ids['event-sync']}/views")
    item = app.locator("#vw-advice li[data-rule='TensorCoresUnused']")
    expect(item).to_contain_text(expected[0]["message"])
    shot(app, "views-advice")
    item.locator("a.evidence").click()
    expect(app.locator("#tab-kernels")).to_have_attribute("aria-selected", "true")
    app.wait_for_selector("#vw-kernels table tbody tr")
    assert "tab=kernels" in app.url


def test_the_kernels_tab_of_a_hopper_run_says_what_the_plugins_tensor_core_names_miss(
    app: Any, jobs: PagesJobs
) -> None:
    """The H200 fixture: its GEMMs and attention ran in tensor-core kernels the plugin's list does
    not name; the Kernels tab keeps the plugin's column and says what current names find."""
    from profilerhub_analysis.tbviews import views_and_calls
    from tests.e2e.pages_stack import TRACE_JOBS

    views, _ = views_and_calls(gzip.decompress(TRACE_JOBS["h200-vit"][0].read_bytes()))
    facts = views["tb_facts"]
    assert facts["tc_used_current_pct"] > facts["tc_used_pct"] + 0.5, facts
    [note] = [n for n in views["tb_notes"] if n.startswith("Tensor cores:")]
    open_page(app, f"jobs/{jobs.ids['h200-vit']}/views?tab=kernels")
    app.wait_for_selector("#vw-kernels table tbody tr")
    expect(app.locator("p.vw-note[role='note']").filter(has_text="Tensor cores:")).to_have_text(note)
    nvjet = app.locator("#vw-kernels table tbody tr").filter(has_text="nvjet_sm90").first
    expect(nvjet).to_be_visible()  # listed, its Tensor Cores column the plugin's
    shot(app, "views-kernels-hopper-tensor-cores")


def test_the_profile_views_distributed_tab_splits_each_rank_and_lists_its_collectives(
    app: Any, jobs: PagesJobs
) -> None:
    from tests.e2e.pages_stack import TRACE_JOBS

    cli = [analyze(p) for p in TRACE_JOBS["two-ranks"]]
    open_page(app, f"jobs/{jobs.ids['two-ranks']}/views?tab=distributed")
    app.wait_for_selector("#vw-ranks .rank-split")
    expect(app.locator("#vw-ranks .rank-split")).to_have_count(2)
    rows = table_of(app, "vw-ranks")
    first = cli[0]["tb_distributed"]["average"]
    cells = rows.first.locator("td").all_inner_texts()
    assert len(cells) == 5 and cells[2]  # rank, computation, overlapped, communication, other
    assert _shown_total(app, "vw-collectives") == len(cli[0]["tb_distributed"]["collectives"])
    assert first["communication_us"] > 0
    shot(app, "views-distributed")


def _module_rows(roots: list[dict[str, Any]]) -> list[tuple[int, dict[str, Any]]]:
    out: list[tuple[int, dict[str, Any]]] = []
    todo = [(0, r) for r in reversed(roots)]
    while todo:
        depth, m = todo.pop()
        out.append((depth, m))
        todo.extend((depth + 1, c) for c in reversed(m["children"]))
    return out


def test_the_profile_views_modules_tab_shows_the_models_tree_and_collapses_it(
    app: Any, jobs: PagesJobs
) -> None:
    from tests.e2e.pages_stack import TRACE_JOBS

    cli = analyze(TRACE_JOBS["modules-cpu"][0])
    expected = _module_rows(cli["tb_modules"])
    open_page(app, f"jobs/{jobs.ids['modules-cpu']}/views?tab=modules")
    app.wait_for_selector("#vw-modules table tbody tr")
    rows = _views_rows(app, "vw-modules")
    expect(rows).to_have_count(len(expected))  # two levels open: nothing deeper has children here
    for i, (depth, m) in enumerate(expected):
        cells = rows.nth(i).locator("td")
        assert rows.nth(i).get_attribute("data-depth") == str(depth)
        assert cells.nth(0).get_attribute("data-raw") == m["name"]
        assert int(cells.nth(1).get_attribute("data-raw")) == m["calls"]
        assert float(cells.nth(3).get_attribute("data-raw")) == pytest.approx(m["host_total_us"])
    expect(app.locator("#vw-modules th")).to_have_count(6)  # CPU-only: no device columns
    shot(app, "views-modules")
    assert table_of(app, "vw-top-modules").count() == len(cli["tb_modules"][0]["children"])

    block = app.locator("#vw-modules tr", has=app.locator("td[data-raw='Block_0']"))
    toggle = block.locator("button.mod-toggle")
    expect(toggle).to_have_attribute("aria-expanded", "true")
    toggle.click()  # collapse: Block_0's two children go
    expect(rows).to_have_count(
        len(expected) - len(next(m for _, m in expected if m["name"] == "Block_0")["children"])
    )
    expect(block.locator("button.mod-toggle")).to_have_attribute("aria-expanded", "false")
    app.keyboard.press("Enter")  # the toggle keeps the focus: Enter opens it again
    expect(rows).to_have_count(len(expected))

    block.locator("a").click()  # a module opens its calls in the timeline
    app.wait_for_selector("#tl-view[data-ready='true']")
    assert app.locator("#tl-query").input_value() == "nn.Module: Block_0"


def test_a_timeline_range_opens_the_operators_called_in_it(app: Any, jobs: PagesJobs) -> None:
    from urllib.parse import parse_qs, urlparse

    from profilerhub_analysis.tbviews.calls import operator_calls, operators_between
    from profilerhub_analysis.tbviews.parse import parse
    from profilerhub_analysis.tbviews.tree import build
    from tests.e2e.pages_stack import TRACE_JOBS

    canvas = open_timeline(app, jobs.ids["modules-cpu"])
    box = canvas.bounding_box()
    y = box["y"] + 8  # the ruler: a drag there selects a range
    app.mouse.move(box["x"] + box["width"] * 0.35, y)
    app.mouse.down()
    app.mouse.move(box["x"] + box["width"] * 0.65, y, steps=5)
    app.mouse.up()
    link = app.locator("#box-operators")
    expect(link).to_be_visible()
    query = parse_qs(urlparse(link.get_attribute("href")).query)
    t0, t1 = float(query["t0us"][0]), float(query["t1us"][0])
    forest = build(parse(gzip.decompress(TRACE_JOBS["modules-cpu"][0].read_bytes())))
    want, _, n = operators_between(operator_calls(forest), t0, t1)
    assert n > 0
    link.click()
    expect(app.locator("#vw-range")).to_contain_text(f"{n:,} calls")
    assert "t0us=" in app.url and "tab=operators" in app.url
    assert _shown_total(app, "vw-ops") == len(want)
    assert _views_rows(app, "vw-ops").first.locator("td").first.inner_text() == want[0]["name"]
    shot(app, "views-operators-range")
    app.click("#vw-range-clear")
    expect(app.locator("#vw-range")).to_have_count(0)
    assert _shown_total(app, "vw-ops") == len(analyze(TRACE_JOBS["modules-cpu"][0])["tb_operators"])


def _rank_trace(rank: int, slow: bool) -> bytes:
    """A small GPU trace of rank ``rank``: three profiled steps of a 300 µs kernel each (900 µs
    for the slow rank), its clock 1 ms later per rank (baseTimeNanoseconds), so the overview's
    rows are shifted one from the next."""
    from tests.analysis.tracegen import annotation, encode, kernel, runtime

    step, busy = 1000.0, (900.0 if slow else 300.0)
    events = []
    for n in range(3):
        t = n * step
        events += [
            annotation(f"ProfilerStep#{n}", t, step - 10),
            runtime("cudaLaunchKernel", t + 5, 5, correlation=n + 1),
            kernel("gemm", t + 20, busy, correlation=n + 1),
        ]
    header = {"distributedInfo": {"rank": rank, "world_size": 40}, "baseTimeNanoseconds": rank * 1_000_000}
    return gzip.compress(encode(events, **header))


def test_a_forty_rank_job_shows_every_rank_over_time_and_pages_its_table(
    app: Any, jobs: PagesJobs, pages_stack: JobStack
) -> None:
    ranks, slow = 40, 17
    with httpx.Client(base_url=pages_stack.url, headers=auth(jobs.token), timeout=60) as http:
        job_id = http.post(jobs.jobs_url, json={"name": "forty-ranks"}).json()["job_id"]
        for r in range(ranks):
            trace = _rank_trace(r, r == slow)
            put = http.put(f"{jobs.jobs_url}/{job_id}/files/torch/rank{r}.pt.trace.json.gz", content=trace)
            assert put.status_code == 201, put.text
        assert http.post(f"{jobs.jobs_url}/{job_id}/complete").status_code == 202
    assert pages_stack.wait_for_job(jobs.token, job_id, timeout=240)["status"] == "Ready"

    answer = jobs.api(pages_stack, f"jobs/{job_id}/ranks")
    overview = answer["overview"]
    shown = [r["rank"] for r in overview["ranks"]]
    if shown != list(range(ranks)):  # what went missing, where: the job's warnings and the worker's log
        job = jobs.api(pages_stack, f"jobs/{job_id}")
        pytest.fail(
            f"overview ranks {shown}; table ranks {[r['rank'] for r in answer['ranks']]}; "
            f"job {json.dumps(job)[:4000]}\n{pages_stack.output()}"
        )
    # rank r's clock is r ms later: its first step starts r ms after rank 0's
    starts = [r["steps"][0][0] for r in overview["ranks"]]
    assert starts == pytest.approx([1000.0 * r for r in range(ranks)], abs=1.0)
    # mean over the columns its trace covers: ~90 % busy (900 of 1000 µs a step) against ~30 %
    busy = {r["rank"]: [v for v in r["busy_pct"] if v is not None] for r in overview["ranks"]}
    mean = {rank: sum(v) / len(v) for rank, v in busy.items()}
    assert mean[slow] > 75 and all(20 < mean[r] < 45 for r in range(ranks) if r != slow), mean
    flagged = {s["rank"] for s in answer["stragglers"]["stragglers"]}
    assert flagged == {slow}

    open_page(app, f"jobs/{job_id}")
    app.wait_for_selector("#panels[data-ready='true']")
    chart = app.locator("#ranks-overview .chart")
    expect(chart).to_have_attribute("data-ranks", str(ranks))
    expect(app.locator("#ranks-overview-map")).to_be_visible()
    # the table pages 32 at a time, the rank shown on the first page
    table = app.locator("#ranks")
    expect(table.locator("tbody tr")).to_have_count(32)
    expect(app.locator("#ranks-page")).to_contain_text("1–32 of 40")
    app.click("#ranks-next")
    expect(table.locator("tbody tr")).to_have_count(8)
    expect(table.locator("tr.straggler")).to_have_count(0)  # rank 17 is on the first page
    app.click("#ranks-prev")
    expect(table.locator("tr.straggler")).to_contain_text(f"⚠ {slow}")
    app.locator("#ranks-overview").screenshot(path=str(shot_path("dashboard-ranks-overview")))

    # keyboard: focus the map, go to a busy cell of the slow rank, Enter opens its timeline there
    row = overview["ranks"][slow]
    col = next(c for c, v in enumerate(row["busy_pct"]) if v is not None and v > 50) + 3
    app.focus("#ranks-overview-map")
    app.keyboard.press("Home")
    for _ in range(slow):
        app.keyboard.press("ArrowDown")
    for _ in range(col):
        app.keyboard.press("ArrowRight")
    expect(app.locator("#ranks-overview .heat-readout")).to_contain_text(f"rank {slow} · at")
    app.keyboard.press("Enter")
    app.wait_for_url("**/timeline?trace=*")
    assert f"trace={row['index']}" in app.url and "t0us=" in app.url
    app.wait_for_selector("#tl-view[data-ready='true']")
    wall = (
        "() => { const s = window.__timeline.state;"
        " return [Number(s.lanesInfo.origin_ns), s.scale.start, s.scale.end]; }"
    )
    origin, start, end = app.evaluate(wall)
    want = overview["start_us"] + (col - 2) * overview["column_us"]  # the cell, two columns before
    assert (origin + start) / 1000 == pytest.approx(want, abs=1.0)
    assert (end - start) / 1000 == pytest.approx(5 * overview["column_us"], rel=0.01)
    shot(app, "timeline-from-ranks-overview")

    # the timeline's rank picker opens another rank over the same wall-clock time (the rank
    # before: its trace, 1 ms earlier, covers that time too)
    app.select_option("#tl-rank", str(overview["ranks"][slow - 1]["index"]))
    app.wait_for_url(f"**trace={overview['ranks'][slow - 1]['index']}&*")
    app.wait_for_selector("#tl-view[data-ready='true']")
    origin2, start2, _ = app.evaluate(wall)
    assert (origin2 + start2) / 1000 == pytest.approx(want, abs=1.0)
    assert origin - origin2 == pytest.approx(1_000_000, abs=1000)  # its clock: 1 ms earlier
    expect(app.locator("#tl-all-ranks")).to_have_attribute("href", re.compile("#ranks-overview$"))
    expect(app.locator("#tl-rank")).to_have_value(str(overview["ranks"][slow - 1]["index"]))
    shot(app, "timeline-rank-picker")
