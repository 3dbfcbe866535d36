"""Each Celery worker writes a heartbeat row every few seconds, so /healthz can count live workers
on any broker (the filesystem broker has no broadcast, so `inspect ping` cannot be used everywhere)."""
import os
import socket
import threading

from celery.signals import worker_ready, worker_shutdown

_stop = threading.Event()


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

    hostname = _hostname(sender)
    _stop.clear()

    def loop():
        while not _stop.is_set():
            try:
                beat_once(hostname)
            except Exception:  # the database may be briefly unavailable; try again next beat
                pass
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
