"""The Celery app. Every mode uses it: the embedded filesystem broker, Redis, and eager tests."""

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "stereoscope.settings")

app = Celery("stereoscope")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()

from . import worker_heartbeat  # noqa: E402,F401  (connects the worker signals)
