"""The Celery app. Every mode uses it: the embedded filesystem broker, Redis, and eager tests."""

import os

from celery import Celery
from celery.signals import beat_embedded_init
from kombu.utils.objects import cached_property

from .broker import use_whole_message_writes
from .process_lifetime import end_with_worker

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "stereoscope.settings")
use_whole_message_writes()

WORKER_STEPS_OFF = ("without_gossip", "without_mingle", "without_heartbeat")


class StereoscopeCelery(Celery):
    """The app's `celery worker` always runs without gossip, mingle and event heartbeats (its own database heartbeat
    tells health which workers live): those steps are restarted after every lost broker connection, and that restart
    is where a worker on Redis died when Redis came back. Without them a plain `celery -A stereoscope worker`
    reconnects and goes on."""

    @cached_property
    def Worker(self):
        base = self.subclass_with_self("celery.apps.worker:Worker")

        def __init__(worker, *args, **kwargs):
            kwargs.update(dict.fromkeys(WORKER_STEPS_OFF, True))
            base.__init__(worker, *args, **kwargs)

        return type("Worker", (base,), {"__init__": __init__, "__module__": __name__})


app = StereoscopeCelery("stereoscope")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
beat_embedded_init.connect(end_with_worker, weak=False)  # the beat `worker --beat` forks ends with its worker

from . import worker_heartbeat  # noqa: E402,F401  (connects the worker signals)
