"""Celery workers: app lifecycle, trace ingest, rules; spawners."""
