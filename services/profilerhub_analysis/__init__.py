"""Trace readers, the columnar event store, statistics, timeline level of detail and rules.

No web or database dependencies: usable from the ingest worker, the profiler app and scripts.
"""
