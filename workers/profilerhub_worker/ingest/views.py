"""What the profiler app reads of each trace, written once at ingest beside its event store.

Under ``processed/traces/<n>-<name>/``:

    events.parquet, ...   the event store (``write.put_event_store``)
    dashboard.json        ``profilerhub_analysis.dashboard.trace_panels``: the panels the report
                          does not hold (active time, CPU utilisation, histograms, op totals)
    timeline/             ``TraceTimeline.to_files()``: the timeline index and per-event columns
                          as ``.npy`` (the app memory-maps them), ``lanes.json``, the overview
                          (the first view, ``overview.phw``); ``timeline/done``
                          is written last, so a reader never maps a half-written folder

The trace's summary entry gets ``dashboard`` and ``timeline`` keys naming them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import orjson

from profilerhub_analysis.dashboard import trace_panels
from profilerhub_analysis.sdk_records import AnnotationRecord
from profilerhub_analysis.store import EventStore
from profilerhub_analysis.timeline.bundle import TraceTimeline
from profilerhub_core.jobstorage import JobPlace
from profilerhub_core.storage import ObjectStore
from profilerhub_worker.ingest.write import put_event_store

DASHBOARD = "dashboard.json"
TIMELINE = "timeline"
DONE = "done"


def put_trace(
    store: ObjectStore,
    place: JobPlace,
    folder: str,
    events: EventStore,
    entry: dict[str, Any],
    annotations: Sequence[AnnotationRecord] = (),
) -> None:
    """Write one trace's event store, dashboard panels and timeline (with a lane per thread of the
    SDK's ``annotations``); name them in ``entry``."""
    put_event_store(store, place, folder, events)
    panels = trace_panels(events, entry["report"])
    store.put(
        place.processed_key(f"{folder}/{DASHBOARD}"), orjson.dumps(panels, option=orjson.OPT_SERIALIZE_NUMPY)
    )
    timeline = TraceTimeline.build(events, source=entry.get("file", ""), annotations=annotations)
    for name, data in timeline.to_files().items():
        store.put(place.processed_key(f"{folder}/{TIMELINE}/{name}"), data)
    del timeline
    store.put(place.processed_key(f"{folder}/{TIMELINE}/{DONE}"), b"")
    entry["dashboard"] = f"processed/{folder}/{DASHBOARD}"
    entry["timeline"] = f"processed/{folder}/{TIMELINE}/"


__all__ = ["DASHBOARD", "DONE", "TIMELINE", "put_trace"]
