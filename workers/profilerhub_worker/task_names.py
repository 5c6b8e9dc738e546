"""Task names: the interface between the hub (which sends by name) and the workers.

Kept apart from ``celery_app`` so the hub can name tasks without importing Celery at start.
"""

APP_QUEUE = "profilerhub-apps"
SPAWN_APP = "profilerhub.apps.spawn"
DELETE_APP = "profilerhub.apps.delete"
RECONCILE_APPS = "profilerhub.apps.reconcile"
POLL_APPS = "profilerhub.apps.poll"
CULL_IDLE_APPS = "profilerhub.apps.cull_idle"
