"""The profiler app's pages as HTTP answers (in-process): shells under a strict CSP with nothing
inline, their modules and vendored libraries served by the app itself, and one job's record for
a dashboard that waits for ingest. What the pages do in a browser is tests/e2e/test_e2e_pages.py."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any
from urllib.parse import urljoin

import sqlalchemy as sa
from fastapi.testclient import TestClient
from starlette.applications import Starlette
from starlette.routing import Mount

from profilerhub_app.assets import IMMUTABLE, REVALIDATE, Assets, folder_version
from profilerhub_core.db.models import Job
from profilerhub_worker.ingest import IngestContext, ingest_job
from tests.support.jobs import make_job, open_app, sdk_files

STATIC = Path(__file__).resolve().parents[2] / "services" / "profilerhub_app" / "static"


def test_every_page_is_a_shell_with_a_strict_csp_and_nothing_inline(
    ctx: IngestContext, jobs_hub: Any, jobs_client: TestClient, tmp_path: Path
) -> None:
    with open_app(ctx, jobs_hub, jobs_client, tmp_path / "store", "alice") as app:
        for path in (
            "",
            "jobs/0a1b2c3d-0000-4000-8000-000000000001",
            "jobs/x/timeline",
            "compare",
            "jobs/x/model",
        ):
            page = app.get(path)
            assert page.status_code == 200, path
            csp = page.headers["content-security-policy"]
            assert "script-src 'self'" in csp and "style-src 'self'" in csp and "unsafe" not in csp
            # framed only by the app's own pages (compare shows two timelines)
            assert "frame-ancestors 'self'" in csp and page.headers["x-frame-options"] == "SAMEORIGIN"
            assert re.search(r"<script(?![^>]*\bsrc=)", page.text) is None  # no inline script
            assert " style=" not in page.text and "<style" not in page.text
            assert "alice&#x27;s profiler" in page.text or "alice's profiler" in page.text
        assert "data-embed" in app.get("jobs/x/timeline?embed=1").text
        assert "data-embed" not in app.get("jobs/x/timeline").text
        scripts = re.findall(r'src="([^"]+\.js)"', app.get("compare").text)
        assert scripts and all(
            app.get(s.split("/apps/", 1)[1].split("/", 1)[1]).status_code == 200 for s in scripts
        )


def test_the_app_serves_its_modules_and_the_vendored_chart_library_with_its_licence(
    ctx: IngestContext, jobs_hub: Any, jobs_client: TestClient, tmp_path: Path
) -> None:
    with open_app(ctx, jobs_hub, jobs_client, tmp_path / "store", "alice") as app:
        module = app.get("static/js/dashboard.js")
        assert module.status_code == 200 and "javascript" in module.headers["content-type"]
        uplot = app.get("static/vendor/uplot/uPlot.esm.js")
        assert uplot.status_code == 200 and "export" in uplot.text
        assert "MIT" in app.get("static/vendor/uplot/LICENSE").text
        assert app.get("static/../main.py").status_code == 404
    assert all(f.stat().st_size <= 2 << 20 for f in STATIC.rglob("*") if f.is_file())
    for module in STATIC.rglob("*.js"):  # no CDN: every import is relative
        text = module.read_text()  # import/export statements' sources, not strings that say "from"
        imports = re.findall(r'^\s*(?:import|export)\s[^"]*?\bfrom\s+"([^"]+)"', text, re.M)
        imports += re.findall(r'^\s*import\s+"([^"]+)"', text, re.M)
        assert all(i.startswith(".") for i in imports), module


def _imports(text: str) -> list[str]:
    """A module's relative imports: static ones and ``import("…")``, and the paths it preloads."""
    found = re.findall(r'^\s*(?:import|export)\s[^"]*?\bfrom\s+"([^"]+)"', text, re.M)
    found += re.findall(r'\bimport\(\s*"([^"]+)"\s*\)', text)
    found += re.findall(r'"(\.\.?/[^"]+\.js)"', text)
    return found


def test_every_page_links_its_files_under_the_apps_version_cached_for_good(
    ctx: IngestContext, jobs_hub: Any, jobs_client: TestClient, tmp_path: Path
) -> None:
    """The pages link ``assets/{version}/…``, answered ``immutable`` (a page opened again asks for
    none of them), and so is every module those import, relative to their own URL; the same files
    under ``static/`` and under another version are revalidated on each load."""
    with open_app(ctx, jobs_hub, jobs_client, tmp_path / "store", "alice") as app:
        prefix = app.base_url.path  # /apps/{id}/
        versions, seen = set(), set()
        for path in ("", "jobs/x", "jobs/x/timeline", "jobs/x/views", "jobs/x/model", "compare"):
            html = app.get(path).text
            todo = [u for u in re.findall(r'(?:href|src)="([^"]+)"', html) if "/assets/" in u]
            assert any(u.endswith(".js") for u in todo), path
            while todo:
                url = todo.pop()
                if url in seen:
                    continue
                seen.add(url)
                assert url.startswith(f"{prefix}assets/"), url
                versions.add(url[len(f"{prefix}assets/") :].split("/", 1)[0])
                answer = app.get(url[len(prefix) :])
                assert answer.status_code == 200, url
                assert answer.headers["cache-control"] == IMMUTABLE, url
                if url.endswith(".js"):
                    todo += [urljoin(url, i) for i in _imports(answer.text)]
        assert len(versions) == 1 and len(seen) > 20
        (version,) = versions
        assert f"{prefix}assets/{version}/vendor/uplot/uPlot.esm.js" in seen  # found through charts.js
        for other in ("static/js/views.js", "static/base/common.js", "assets/0123456789abcdef/js/views.js"):
            answer = app.get(other)
            assert answer.status_code == 200 and answer.headers["cache-control"] == REVALIDATE, other
            assert answer.headers["etag"]
        assert app.get(f"assets/{version}/js/nothing.js").status_code == 404


def test_a_file_changed_after_the_version_was_taken_is_not_cached_for_good(tmp_path: Path) -> None:
    """The version is every file's path and bytes; a file newer than the version (an editable
    install edited while the app runs) is answered for revalidation under it, never kept."""
    static, shared = tmp_path / "static", tmp_path / "shared"
    (static / "js").mkdir(parents=True)
    shared.mkdir()
    (static / "js" / "a.js").write_text("export const a = 1;\n")
    (shared / "common.js").write_text("export const c = 1;\n")
    assets = Assets(static, shared)
    assert assets.version == folder_version(static, shared)
    web = Starlette(
        routes=[
            Mount("/assets/{version}/base", app=assets.folder(shared=True)),
            Mount("/assets/{version}", app=assets.folder()),
        ]
    )
    with TestClient(web) as client:
        for path in ("js/a.js", "base/common.js"):
            assert client.get(f"{assets.url('/')}/{path}").headers["cache-control"] == IMMUTABLE
        changed = static / "js" / "a.js"
        changed.write_text("export const a = 2;\n")
        os.utime(changed, (assets.taken + 5, assets.taken + 5))
        answer = client.get(f"{assets.url('/')}/js/a.js")
        assert answer.headers["cache-control"] == REVALIDATE and "a = 2" in answer.text
    assert folder_version(static, shared) != assets.version  # the next start links new URLs
    (static / "js" / "a.js").rename(static / "js" / "b.js")
    assert folder_version(static, shared) != assets.version


def test_one_job_is_described_as_the_list_does_and_unknown_ones_are_404(
    ctx: IngestContext, jobs_hub: Any, jobs_client: TestClient, tmp_path: Path
) -> None:
    ready, _ = make_job(ctx, sdk_files(steps=3))
    assert ingest_job(ready, ctx) == "Ready"
    with open_app(ctx, jobs_hub, jobs_client, Path(ctx.store.root), "alice") as app:
        one = app.get(f"api/jobs/{ready}")
        assert one.status_code == 200
        assert one.json() == next(j for j in app.get("api/jobs").json()["items"] if j["job_id"] == ready)
        assert (one.json()["status"], one.json()["steps"], one.json()["ranks"]) == ("Ready", 3, 0)
        # a job ingested before the hub kept the list's figures: read from its folder instead
        with ctx.sessions() as session:
            nulls = dict.fromkeys(("duration_s", "steps", "gpus", "ranks"))
            session.execute(sa.update(Job).where(Job.id == ready).values(**nulls, updated_at=Job.updated_at))
            session.commit()
        assert app.get(f"api/jobs/{ready}").json() == one.json()
        missing = app.get("api/jobs/0a1b2c3d-0000-4000-8000-0000000000ff")
        assert missing.status_code == 404 and missing.json()["error"]["code"] == "ResourceNotFound"


COMPARE_BASE = "traces/hta/tests/data/trace_compare/base/base.json.gz"


def test_a_box_selection_aggregates_the_events_inside_it(
    ctx: IngestContext, jobs_hub: Any, jobs_client: TestClient, tmp_path: Path, shared_dir: Path
) -> None:
    job_id, _ = make_job(ctx, {"torch/base.json.gz": (shared_dir / COMPARE_BASE).read_bytes()})
    assert ingest_job(job_id, ctx) == "Ready"
    with open_app(ctx, jobs_hub, jobs_client, Path(ctx.store.root), "alice") as app:
        base = f"api/jobs/{job_id}/timeline"
        end = app.get(f"{base}/lanes").json()["t_end"]
        whole = app.get(f"{base}/aggregate", params={"start": 0, "end": end + 1, "limit": 1000}).json()
        found = app.get(f"{base}/search", params={"q": "aten::zeros"}).json()
        zeros = next(op for op in whole["ops"] if op["name"] == "aten::zeros")
        assert zeros["count"] == found["total"] > 0
        assert whole["events"] >= sum(op["count"] for op in whole["ops"][:3])
        first = found["matches"][0]
        one = app.get(
            f"{base}/aggregate", params={"start": first["start"], "end": first["start"] + first["dur"]}
        )
        assert {"name": "aten::zeros", "count": 1, "total_ns": first["dur"]} in one.json()["ops"]
        for bad in ({"start": 10, "end": 5}, {"start": "x", "end": 5}, {"start": 0}):
            answer = app.get(f"{base}/aggregate", params=bad)
            assert answer.status_code == 400 and set(answer.json()["error"]) == {"code", "message"}
