"""Routers of the profiler app, each included by ``create_app`` under ``/apps/{app_id}/``."""
