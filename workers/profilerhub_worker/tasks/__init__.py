"""Celery tasks.  Each is a thin wrapper over a plain function in ``profilerhub_worker.lifecycle``."""
