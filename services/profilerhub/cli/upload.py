"""``profilerhub upload DIR``: send an offline SDK run or plain torch.profiler traces to the hub or S3;
``profilerhub upload --spilled``: deliver what runs kept on local disk because the hub did not take it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer


def register(app: typer.Typer) -> None:
    app.command("upload")(upload)


def upload(
    directory: Path = typer.Argument(
        None,
        help="An SDK output folder (<output>/<job>), a folder of torch.profiler traces, or one "
        "spilled run's folder.",
    ),
    job: str = typer.Option(
        None, "--job", "-j", help="Job name (required for plain torch.profiler folders)."
    ),
    output: str = typer.Option(
        None, "--output", "-o", help="Write to s3://bucket/prefix instead of the hub."
    ),
    hub: str = typer.Option(None, "--hub", envvar="PROFILERHUB_URL", help="Hub URL."),
    token: str = typer.Option(
        None, "--token", envvar="PROFILERHUB_TOKEN", help="API token.", show_envvar=True
    ),
    force: bool = typer.Option(False, "--force", help="Upload again as a new job even if done before."),
    spilled: bool = typer.Option(
        False, "--spilled", help="Deliver every run spilled to local disk (see --spill-dir)."
    ),
    spill_dir: Path = typer.Option(
        None,
        "--spill-dir",
        envvar="PROFILERHUB_SPILL_DIR",
        help="Where runs spill undelivered files (default ~/.cache/profilerhub/spill).",
    ),
    wait: bool = typer.Option(
        False,
        "--wait",
        help="Then follow the hub's ingest until the job is Ready or Failed (traces and bytes done); "
        "exit 1 if it failed. Ctrl-C stops waiting, not the ingest.",
    ),
) -> None:
    """Upload a run's traces; run it again after an interruption to resume where it stopped."""
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        DownloadColumn,
        Progress,
        TextColumn,
        TimeRemainingColumn,
        TransferSpeedColumn,
    )

    from .._upload import PlannedFile, State, UploadError, plan_upload, resumed_hub_job, run_upload
    from ..sinks.base import Sink

    console = Console(stderr=True)

    def fail(exc: UploadError) -> typer.Exit:
        console.print(f"[red]error:[/red] {exc.message}")
        if exc.hint:
            console.print(f"[yellow]what to do:[/yellow] {exc.hint}")
        return typer.Exit(exc.code)

    if spilled or (directory is not None and (directory / ".spill.json").is_file()):
        if spilled and directory is not None:
            raise fail(UploadError("pass either DIR or --spilled", "--spilled delivers every spilled run"))
        raise typer.Exit(_upload_spilled(console, spill_dir, directory, hub, token))
    if directory is None:
        raise fail(UploadError("no folder to upload", "pass DIR, or --spilled for the runs spilled to disk"))
    try:
        plan = plan_upload(directory, job)
    except UploadError as exc:
        raise fail(exc) from None
    sink: Sink
    if output:
        if not output.startswith("s3://") or len(output) <= 5:
            raise fail(
                UploadError(
                    f"--output {output!r} is not an s3://bucket/prefix URL", "e.g. --output s3://traces/team"
                )
            )
        from ..sinks.s3 import S3Sink

        sink = S3Sink(output, plan.job)
        destination = output
    else:
        url = hub
        if not url:
            raise fail(
                UploadError(
                    "no hub to upload to",
                    "set PROFILERHUB_URL or pass --hub URL (or --output s3://bucket/prefix)",
                )
            )
        from ..sinks.hub import HubSink

        sink = HubSink(url.rstrip("/"), token, plan.job)
        destination = url.rstrip("/")

    state = State(directory, destination, plan.job)
    if force:
        state.data.update(done={}, complete=False, location=None, hub_job=None)
    elif state.data.get("complete"):
        console.print(
            f"[green]already uploaded[/green] to {state.data.get('location')}; "
            "pass --force to upload again as a new job"
        )
        return
    hub_job = resumed_hub_job(state)
    if hub_job is not None and hasattr(sink, "job"):
        sink.job = hub_job

    for note in plan.notes:
        console.print(f"[yellow]note:[/yellow] {note}")
    if plan.skipped:
        console.print(
            f"[yellow]note:[/yellow] skipping {len(plan.skipped)} file(s) that are not traces: "
            + ", ".join(plan.skipped[:5])
            + (" ..." if len(plan.skipped) > 5 else "")
        )
    kind = "SDK run" if plan.kind == "sdk" else "profiler traces"
    console.print(f"uploading {kind} [bold]{plan.job}[/bold]: {len(plan.files)} file(s) to {destination}")

    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        DownloadColumn(),
        TransferSpeedColumn(),
        TimeRemainingColumn(),
        console=console,
        transient=False,
    ) as progress:
        task = progress.add_task("uploading", total=plan.total_bytes)

        def on_progress(f: PlannedFile, skipped: bool) -> None:
            progress.update(task, advance=f.size, description=("skipped " if skipped else "") + f.path)

        try:
            result = run_upload(plan, sink, state, on_progress)
        except UploadError as exc:
            progress.stop()
            done = len(state.done)
            console.print(f"{done} of {len(plan.files)} file(s) sent so far")
            raise fail(exc) from None
        finally:
            sink.close()
        progress.update(task, description="done")
    skipped = f", {result['skipped']} already there" if result["skipped"] else ""
    console.print(f"[green]uploaded[/green] {result['sent']} file(s){skipped} to {result['location']}")
    info = result["info"]
    if "job_id" in info:
        console.print(f"job id {info['job_id']}: the hub is processing it")
        if wait:
            raise typer.Exit(_wait_for_ingest(console, sink, info))
    elif wait:
        console.print(
            "[yellow]note:[/yellow] --wait follows the hub's ingest; an s3:// upload has none to follow"
        )


def _wait_for_ingest(console: Any, sink: Any, info: dict[str, Any], every: float = 1.0) -> int:
    """Follow the job's ingest on the hub with a progress bar until it is Ready (0) or Failed (1)."""
    import time

    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    from ..hubclient import HubClient, HubError
    from .jobs import ingested

    client = HubClient(sink.url, sink.token, transport=getattr(sink, "_transport", None))
    columns = (TextColumn("{task.description}"), BarColumn(), TextColumn("{task.fields[done]}"))
    job: dict[str, Any] = {}
    seen: dict[str, int] = {}  # the last progress the hub gave
    try:
        with Progress(*columns, TimeElapsedColumn(), console=console, transient=False) as progress:
            task = progress.add_task("queued", total=None, done="")
            while True:
                try:
                    job = client.get_job(sink.job)
                except HubError as exc:  # the hub away a moment: keep following
                    if exc.fatal:
                        raise
                    progress.update(task, description=f"hub: {exc.message[:60]}")
                    time.sleep(every)
                    continue
                status, done = job.get("status"), job.get("progress") or seen
                if status == "Ready":  # every trace in: the summary's count, the bytes last seen
                    count = len((job.get("summary") or {}).get("traces") or []) or done.get("traces", 0)
                    done = {**done, "traces": count, "traces_done": count, "bytes_done": done.get("bytes", 0)}
                if done:
                    seen = done
                    progress.update(
                        task,
                        description="ingesting",
                        total=max(done.get("traces", 0), 1),
                        completed=done.get("traces_done", 0),
                        done=ingested(done),
                    )
                if status in ("Ready", "Failed"):
                    progress.update(task, description=str(status).lower())
                    break
                if not done:
                    progress.update(task, description="processing" if status == "Processing" else "queued")
                time.sleep(every)
    except KeyboardInterrupt:
        console.print(f"stopped waiting; the hub goes on: profilerhub jobs describe {info['job_id']}")
        return 130
    except HubError as exc:
        console.print(f"[red]error:[/red] following the ingest: {exc.message}")
        return 2
    finally:
        client.close()
    if job.get("status") == "Failed":
        console.print(f"[red]failed:[/red] {job.get('failure_reason') or 'no reason given'}")
        console.print(
            f"[yellow]what to do:[/yellow] profilerhub jobs describe {info['job_id']} for the details"
        )
        return 1
    console.print(f"[green]ready:[/green] {sink.where_to_look()}")
    return 0


def _upload_spilled(
    console: Any, spill_dir: Path | None, entry: Path | None, hub: str | None, token: str | None
) -> int:
    """Deliver the spilled runs under the spill folder (or the one ``entry``); the exit status."""
    from .._delivery import deliver_entry
    from .._spill import deliver_spills, spill_root

    root = entry.parent if entry is not None else spill_root(spill_dir)

    def deliver(found: Path, meta: dict[str, Any]) -> str:
        console.print(f"delivering spilled run [bold]{found.name}[/bold] (job {meta.get('job')})")
        return deliver_entry(found, meta, hub_url=hub, token=token)

    outcome = deliver_spills(root, deliver, only=entry)
    for found, where in outcome["delivered"]:
        console.print(f"[green]delivered[/green] {found.name} to {where}")
    for found in outcome["busy"]:
        console.print(f"[yellow]busy:[/yellow] {found.name} is being written or delivered by another process")
    code = 1 if outcome["busy"] else 0
    for found, exc in outcome["failed"]:
        code = max(code, _failed(console, found, exc))
    if not any(outcome.values()):
        console.print(f"nothing spilled in {root}")
    return code


def _failed(console: Any, entry: Path, exc: Exception) -> int:
    message, hint, code = getattr(exc, "message", str(exc)), getattr(exc, "hint", ""), getattr(exc, "code", 2)
    console.print(f"[red]error:[/red] {entry.name}: {message} (kept in {entry})")
    if hint:
        console.print(f"[yellow]what to do:[/yellow] {hint}")
    return int(code)
