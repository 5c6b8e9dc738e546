"""Trace readers, the columnar event store, statistics, timeline level of detail and rules.

No web or database dependencies: usable from the ingest worker, the profiler app and scripts.

    reader       file -> bytes (gzip, size limit) -> typed events (msgspec)
    build        typed events -> EventStore (columns, interning, lanes, launch join, counters)
    store        EventStore: the column contract, Arrow views, Parquet persistence
    lanes        CPU threads and GPU streams in display order
    intervals    union / coverage arithmetic on interval arrays
    kernels, launch, temporal, memory, sync, steps, utilization, precision
                 one analysis each: EventStore in, JSON-ready rows out
    report       every analysis of one trace (what ``profilerhub analyze`` prints)
    ranks        a directory of per-rank traces: per rank, aggregate, stragglers
    errors       TraceError tree (one-line messages for users)

Typical use::

    from profilerhub_analysis.build import load_trace
    from profilerhub_analysis.report import analyze_store

    report = analyze_store(load_trace("rank0.json.gz"))
"""
