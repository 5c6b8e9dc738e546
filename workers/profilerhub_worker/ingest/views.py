"""What the profiler app reads of each trace, written once at ingest beside its event store.

Under ``processed/traces/<n>-<name>/`` (``layout.trace_folder``; names: ``layout.TRACE_*``):

    dashboard.json        ``profilerhub_analysis.dashboard.trace_panels``: the panels the report
                          does not hold (active time, CPU utilisation, histograms, op totals)
    tb_views.json         ``profilerhub_analysis.tbviews.tb_views``: the TensorBoard plugin's
                          views (overview, GPU summary, operators, kernels, memory), read from
                          the document itself after the event store is gone (``put_tb_views``)
    tb_calls.npz          ``tbviews.calls``: every operator call with its figures, for the
                          Operators view over a time range (a timeline selection)
    timeline/             ``TraceTimeline.to_files()``: the timeline index and per-event columns
                          as ``.npy`` (the app memory-maps them), ``lanes.json``, the overview
                          (the first view, ``overview.phw``); ``timeline/done``
                          is written last, so a reader never maps a half-written folder

The trace's summary entry gets ``dashboard``, ``timeline``, ``tb_views`` and ``tb_calls`` keys naming
them. The
event store they are built from is not kept: nothing reads it once the views are written (a job
ingested again is read from its raw files), and it cost a Parquet write per trace.
"""

from __future__ import annotations

import logging
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import orjson

from profilerhub_analysis import scratch
from profilerhub_analysis.dashboard import trace_panels
from profilerhub_analysis.reader import file_chunks
from profilerhub_analysis.rules.tb_recommendations import brief
from profilerhub_analysis.sdk_records import AnnotationRecord
from profilerhub_analysis.store import EventStore
from profilerhub_analysis.stream import SLICE_BYTES
from profilerhub_analysis.tbviews import views_and_calls
from profilerhub_analysis.tbviews.calls import pack_into
from profilerhub_analysis.tbviews.parse import parse_chunks
from profilerhub_analysis.timeline.bundle import TraceTimeline
from profilerhub_core.jobstorage import JobPlace
from profilerhub_core.storage import ObjectStore
from profilerhub_core.storage.layout import (
    TIMELINE_DONE,
    TRACE_DASHBOARD,
    TRACE_TB_CALLS,
    TRACE_TB_VIEWS,
    TRACE_TIMELINE,
    processed_name,
)

log = logging.getLogger(__name__)


def put_trace(
    store: ObjectStore,
    place: JobPlace,
    folder: str,
    events: EventStore,
    entry: dict[str, Any],
    annotations: Sequence[AnnotationRecord] = (),
) -> None:
    """Write one trace's dashboard panels and timeline (with a lane per thread of the SDK's
    ``annotations``), built from its event store ``events``; name them in ``entry``."""
    panels = trace_panels(events, entry["report"])
    store.put(
        place.processed_key(f"{folder}/{TRACE_DASHBOARD}"),
        orjson.dumps(panels, option=orjson.OPT_SERIALIZE_NUMPY),
    )
    del panels
    scratch.trim_heap()  # what the panels freed, given back before the timeline is built
    timeline = TraceTimeline.build(events, source=entry.get("file", ""), annotations=annotations)
    scratch.trim_heap()
    for name, data in timeline.iter_files():  # one file's bytes at a time
        store.put(place.processed_key(f"{folder}/{TRACE_TIMELINE}/{name}"), data)
        del data
    del timeline
    store.put(place.processed_key(f"{folder}/{TRACE_TIMELINE}/{TIMELINE_DONE}"), b"")
    entry["dashboard"] = processed_name(f"{folder}/{TRACE_DASHBOARD}")
    entry["timeline"] = processed_name(f"{folder}/{TRACE_TIMELINE}") + "/"


def put_tb_views(
    store: ObjectStore, place: JobPlace, folder: str, entry: dict[str, Any], path: Path, size: int
) -> None:
    """Write the TensorBoard plugin's views of the (decompressed) trace at ``path``, and its operator
    calls (the Operators view over a time range); name them in ``entry``.

    The views are an addition to the trace, never a reason to lose it: if they cannot be computed
    (a bug, or a document shaped in a way nobody foresaw) the trace is kept without them, the
    reason logged and named in ``entry["tb_views_error"]``.
    """
    try:
        views, calls = views_and_calls(parse_chunks(file_chunks(path, size, size=SLICE_BYTES)))
    except Exception as exc:  # noqa: BLE001 - see above: the trace must survive its extras
        log.exception("%s: the TensorBoard views could not be computed", entry.get("file"))
        entry["tb_views_error"] = f"{type(exc).__name__}: {exc}"[:300]
        return
    store.put(place.processed_key(f"{folder}/{TRACE_TB_VIEWS}"), orjson.dumps(views))
    entry["tb_views"] = processed_name(f"{folder}/{TRACE_TB_VIEWS}")
    with tempfile.TemporaryFile(prefix="profilerhub-calls-") as packed:  # not the calls' bytes in memory
        pack_into(calls, packed)
        del calls
        packed.seek(0)
        store.put(place.processed_key(f"{folder}/{TRACE_TB_CALLS}"), packed)
    entry["tb_calls"] = processed_name(f"{folder}/{TRACE_TB_CALLS}")
    entry["tb_brief"] = brief(views)  # what the recommendation rules read; small, in the summary


__all__ = ["put_tb_views", "put_trace"]
