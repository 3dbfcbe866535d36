"""Each Celery worker writes a heartbeat row every few seconds, so /healthz can count live workers
on any broker (the filesystem broker has no broadcast, so `inspect ping` cannot be used everywhere).

With each beat (and once at start-up) the worker also sweeps for jobs whose workers died (stereoscope.jobs.sweep)
and queues them on its own queue, so they heal without anyone pressing Resume."""

import logging
import os
import socket
import threading

from celery.signals import worker_ready, worker_shutdown

_stop = threading.Event()


def _own_queue(sender):
    """A queue this worker consumes, so the jobs it sweeps up come back to a live worker."""
    try:
        names = sorted(sender.app.amqp.queues.consume_from or sender.app.amqp.queues)
        return names[0] if names else None
    except Exception:
        return None


def sweep_once(queue_name):
    from django.db import close_old_connections

    from .jobs import sweep

    close_old_connections()
    return sweep(queue_name)


def _hostname(sender):
    return getattr(sender, "hostname", None) or f"celery@{socket.gethostname()}:{os.getpid()}"


def beat_once(hostname):
    from django.conf import settings
    from django.db import close_old_connections
    from django.utils import timezone

    from .models import WorkerHeartbeat

    close_old_connections()
    broker = settings.CELERY_BROKER_URL.split(":", 1)[0]
    WorkerHeartbeat.objects.update_or_create(
        hostname=hostname, defaults={"pid": os.getpid(), "broker": broker, "last_seen": timezone.now()}
    )


@worker_ready.connect
def start_heartbeat(sender=None, **_):
    from django.conf import settings

    from .jobs import warm_up

    hostname = _hostname(sender)
    own_queue = _own_queue(sender)
    _stop.clear()
    warm_up()  # before the first beat: a worker is live once it is ready to work at full speed

    def loop():
        while not _stop.is_set():
            try:
                beat_once(hostname)
            except Exception:  # the database may be briefly unavailable; try again next beat
                pass
            try:
                sweep_once(own_queue)
            except Exception:
                logging.getLogger(__name__).warning("the job sweep failed", exc_info=True)
            _stop.wait(settings.WORKER_HEARTBEAT_SECONDS)

    threading.Thread(target=loop, name="stereoscope-heartbeat", daemon=True).start()


@worker_shutdown.connect
def stop_heartbeat(sender=None, **_):
    _stop.set()
    try:
        from .models import WorkerHeartbeat

        WorkerHeartbeat.objects.filter(hostname=_hostname(sender)).delete()
    except Exception:
        pass
