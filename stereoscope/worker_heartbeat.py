"""Each Celery worker writes a heartbeat row every few seconds, so /healthz can count live workers
on any broker (the filesystem broker has no broadcast, so `inspect ping` cannot be used everywhere).

Every worker start is an *instance* (a random id, written with its heartbeat and inherited by its pool's processes
through STEREOSCOPE_WORKER_INSTANCE). The job engine names the instance in the lease tokens it takes, so a lease
whose instance has no fresh heartbeat (and that was not renewed for as long) is free at once: a restarted or a
second worker takes a dead worker's chunks without waiting for them to expire, and health calls the job stalled.

As often as it beats (and once at start-up) the worker also sweeps for jobs whose workers died
(stereoscope.jobs.sweep) and queues them on its own queue, so they heal without anyone pressing Resume. The sweep
has its own thread, so a slow sweep never delays a beat."""

import logging
import os
import socket
import threading
import uuid
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from celery.signals import worker_init, worker_ready, worker_shutdown

if TYPE_CHECKING:
    from django.db.models import Q

_stop = threading.Event()
INSTANCE_ENV = "STEREOSCOPE_WORKER_INSTANCE"
INSTANCE_MARK = "@"  # a lease token "<random>@<instance>" was taken by that worker instance


def instance() -> str:
    """This process's worker instance id, or "" outside a Celery worker (the web process, a CLI run)."""
    return os.environ.get(INSTANCE_ENV, "")


def live_seconds() -> float:
    from django.conf import settings

    return float(getattr(settings, "WORKER_LIVE_SECONDS", 10))


def live_instances(now: datetime | None = None) -> set[str]:
    """The instance ids of the workers with a fresh heartbeat."""
    from django.utils import timezone

    from .models import WorkerHeartbeat

    cutoff = (now or timezone.now()) - timedelta(seconds=live_seconds())
    return set(
        WorkerHeartbeat.objects.filter(last_seen__gte=cutoff).exclude(instance="").values_list("instance", flat=True)
    )


def _renewal_cutoff(now: datetime, lease_seconds: float) -> datetime:
    """A lease expiring before this was last renewed more than a worker's live window ago."""
    return now + timedelta(seconds=lease_seconds - live_seconds())


def orphaned_lease_q(now: datetime, lease_seconds: float, live: set[str] | None = None) -> "Q":
    """Rows (jobs or chunks) whose unexpired lease was taken by a worker instance that has no fresh heartbeat and
    has not renewed it within the live window: that worker is dead, and the lease is free. (Leases taken outside a
    worker, e.g. a CLI run, name no instance and last until they expire.)"""
    from django.db.models import Q

    live = live_instances(now) if live is None else live
    q = Q(lease_token__contains=INSTANCE_MARK) & Q(lease_expires_at__lt=_renewal_cutoff(now, lease_seconds))
    for name in sorted(live):
        q &= ~Q(lease_token__endswith=f"{INSTANCE_MARK}{name}")
    return q


def lease_is_orphaned(
    token: str, expires_at: datetime | None, now: datetime, lease_seconds: float, live: set[str] | None = None
) -> bool:
    """The Python twin of `orphaned_lease_q` for one row."""
    if not token or INSTANCE_MARK not in token or expires_at is None:
        return False
    if expires_at >= _renewal_cutoff(now, lease_seconds):
        return False
    live = live_instances(now) if live is None else live
    return token.rsplit(INSTANCE_MARK, 1)[1] not in live


def _own_queue(sender: Any) -> str | None:  # a Celery WorkController (celery has no type hints)
    """A queue this worker consumes, so the jobs it sweeps up come back to a live worker."""
    try:
        names = sorted(sender.app.amqp.queues.consume_from or sender.app.amqp.queues)
        return names[0] if names else None
    except Exception:
        return None


def sweep_once(queue_name: str | None) -> list[tuple[str, int]]:
    from django.db import close_old_connections

    from .jobs import sweep

    close_old_connections()
    return sweep(queue_name)


def _hostname(sender: object) -> str:
    return getattr(sender, "hostname", None) or f"celery@{socket.gethostname()}:{os.getpid()}"


def beat_once(hostname: str) -> None:
    from django.conf import settings
    from django.db import close_old_connections
    from django.utils import timezone

    from .models import WorkerHeartbeat

    close_old_connections()
    broker = settings.CELERY_BROKER_URL.split(":", 1)[0]
    WorkerHeartbeat.objects.update_or_create(
        hostname=hostname,
        defaults={"pid": os.getpid(), "broker": broker, "last_seen": timezone.now(), "instance": instance()},
    )


@worker_init.connect  # type: ignore[untyped-decorator]  # celery has no type hints; connect returns the function
def new_instance(sender: object = None, **_: object) -> None:
    """A new id for this worker start, before its pool starts (its processes inherit it)."""
    os.environ[INSTANCE_ENV] = uuid.uuid4().hex[:16]


@worker_ready.connect  # type: ignore[untyped-decorator]  # celery has no type hints; connect returns the function
def start_heartbeat(sender: object = None, **_: object) -> None:
    from django.conf import settings

    from .jobs import warm_up

    hostname = _hostname(sender)
    own_queue = _own_queue(sender)
    if not instance():
        new_instance()
    _stop.clear()
    warm_up()  # before the first beat: a worker is live once it is ready to work at full speed

    def beats() -> None:
        while not _stop.is_set():
            try:
                beat_once(hostname)
            except Exception:  # the database may be briefly unavailable; try again next beat
                pass
            _stop.wait(settings.WORKER_HEARTBEAT_SECONDS)

    def sweeps() -> None:
        while not _stop.is_set():
            try:
                sweep_once(own_queue)
            except Exception:
                logging.getLogger(__name__).warning("the job sweep failed", exc_info=True)
            _stop.wait(settings.WORKER_HEARTBEAT_SECONDS)

    threading.Thread(target=beats, name="stereoscope-heartbeat", daemon=True).start()
    threading.Thread(target=sweeps, name="stereoscope-sweep", daemon=True).start()


@worker_shutdown.connect  # type: ignore[untyped-decorator]  # celery has no type hints; connect returns the function
def stop_heartbeat(sender: object = None, **_: object) -> None:
    _stop.set()
    try:
        from .models import WorkerHeartbeat

        WorkerHeartbeat.objects.filter(hostname=_hostname(sender)).delete()
    except Exception:
        pass
