"""The Celery app. Every mode uses it: the embedded filesystem broker, Redis, and eager tests."""

import os

from celery import Celery
from celery.signals import beat_embedded_init

from .broker import use_whole_message_writes
from .process_lifetime import end_with_worker

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "stereoscope.settings")
use_whole_message_writes()

app = Celery("stereoscope")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
beat_embedded_init.connect(end_with_worker, weak=False)  # the beat `worker --beat` forks ends with its worker

from . import worker_heartbeat  # noqa: E402,F401  (connects the worker signals)
