"""Health of the database, the broker and the workers."""
import time

from django.conf import settings
from django.db import connection
from django.utils import timezone


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
    return {
        "ok": database["ok"] and broker["ok"],
        "database": database,
        "broker": broker,
        "workers": {"live": len(workers), "list": workers},
        "eager": bool(settings.CELERY_TASK_ALWAYS_EAGER),
    }
