"""Health of the database, the broker and the workers, and whether jobs wait with no worker to run them.

The project package imports no app: each app registers its job models here from its AppConfig.ready
(`register_job_model`), or any callable that lists its waiting jobs (`register_waiting_jobs`).
"""

import time
from collections import Counter

from django.conf import settings
from django.db import connection
from django.db.models import Q
from django.utils import timezone

WAITING_STATUSES = ("queued", "running")
_waiting_job_sources = {}  # kind -> callable returning dicts {"id", "study_id", "status"}


def check_database():
    started = time.monotonic()
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
            cursor.fetchone()
        return {"ok": True, "vendor": connection.vendor, "ms": round((time.monotonic() - started) * 1000, 1)}
    except Exception as exc:
        return {"ok": False, "vendor": connection.vendor, "error": str(exc)[:300]}


def check_broker():
    from .celery import app

    url = settings.CELERY_BROKER_URL
    transport = url.split(":", 1)[0]
    try:
        with app.connection_for_write() as conn:
            conn.ensure_connection(max_retries=1, timeout=3)
        return {"ok": True, "transport": transport}
    except Exception as exc:
        return {"ok": False, "transport": transport, "error": str(exc)[:300]}


def register_waiting_jobs(kind, source):
    """`source()` returns the waiting jobs of one kind as dicts with id, study_id and status."""
    _waiting_job_sources[kind] = source


def register_job_model(kind, model):
    """A job model with status and lease columns: its waiting rows are queued or running with no live lease."""
    register_waiting_jobs(kind, lambda: waiting_rows(model._default_manager.all()))


def job_kinds():
    return sorted(_waiting_job_sources)


def _lease_seconds():
    return float(getattr(settings, "JOB_LEASE_SECONDS", 60))


def waiting_rows(queryset, now=None):
    """Queued or running rows no live executor holds: no lease, an expired one, or one whose worker's heartbeat
    stopped (stereoscope.worker_heartbeat), so a job whose every worker died waits at once, not a lease later."""
    from .worker_heartbeat import orphaned_lease_q

    now = now or timezone.now()
    unheld = (
        Q(lease_token="")
        | Q(lease_expires_at__isnull=True)
        | Q(lease_expires_at__lt=now)
        | orphaned_lease_q(now, _lease_seconds())
    )
    return list(queryset.filter(unheld, status__in=WAITING_STATUSES).order_by("pk").values("id", "study_id", "status"))


def job_is_waiting(job, now=None):
    """One job row: queued or running, and no executor holds a live lease on it (a CLI run in the foreground does;
    a worker whose heartbeat stopped does not)."""
    from .worker_heartbeat import lease_is_orphaned

    if getattr(job, "status", None) not in WAITING_STATUSES:
        return False
    now = now or timezone.now()
    expires = getattr(job, "lease_expires_at", None)
    token = getattr(job, "lease_token", "")
    if not token or expires is None or expires < now:
        return True
    return lease_is_orphaned(token, expires, now, _lease_seconds())


def waiting_jobs():
    return [{"kind": kind, **row} for kind in job_kinds() for row in _waiting_job_sources[kind]()]


def worker_is_live():
    """True when a worker heartbeat is fresh, or tasks run eagerly in the web process (no worker is needed)."""
    from .models import WorkerHeartbeat

    if settings.CELERY_TASK_ALWAYS_EAGER:
        return True
    cutoff = timezone.now() - timezone.timedelta(seconds=settings.WORKER_LIVE_SECONDS)
    return WorkerHeartbeat.objects.filter(last_seen__gte=cutoff).exists()


def waiting_jobs_without_worker():
    """Jobs of any kind that wait while no worker is live: stalled until a worker starts."""
    return [] if worker_is_live() else waiting_jobs()


def job_is_stalled(job):
    """A job page's question: does this job wait with no live worker to run it?"""
    return job_is_waiting(job) and not worker_is_live()


def live_workers():
    from .models import WorkerHeartbeat

    cutoff = timezone.now() - timezone.timedelta(seconds=settings.WORKER_LIVE_SECONDS)
    return [
        {"hostname": hb.hostname, "pid": hb.pid, "broker": hb.broker, "last_seen": hb.last_seen.isoformat()}
        for hb in WorkerHeartbeat.objects.filter(last_seen__gte=cutoff).order_by("hostname")
    ]


def health_report():
    database = check_database()
    broker = check_broker()
    workers = live_workers() if database["ok"] else []
    stalled = waiting_jobs_without_worker() if database["ok"] else []
    ok = database["ok"] and broker["ok"] and not stalled
    return {
        "ok": ok,
        "status": "ok" if ok else "degraded",
        "database": database,
        "broker": broker,
        "workers": {"live": len(workers), "list": workers},
        # counts only: /healthz is public, so it names no study and no job
        "jobs": {
            "stalled": len(stalled),
            "stalled_by_kind": dict(Counter(job["kind"] for job in stalled)),
            "message": f"{len(stalled)} job(s) wait with no live worker; start one." if stalled else "",
        },
        "eager": bool(settings.CELERY_TASK_ALWAYS_EAGER),
    }
