"""Start the web server and one Celery worker beside it: the embedded default's production-like path."""
import os
import signal
import subprocess
import sys
import time

from django.conf import settings
from django.core.management.base import BaseCommand


def die_with_parent():
    """Linux: the child gets SIGTERM when `serve` exits, however it exits."""
    try:
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except OSError:
        pass


class Command(BaseCommand):
    help = "Serve Stereoscope with gunicorn and start one Celery worker beside it."

    def add_arguments(self, parser):
        parser.add_argument("--bind", default=os.environ.get("BIND", "127.0.0.1:8000"))
        parser.add_argument("--web-workers", type=int, default=int(os.environ.get("WEB_CONCURRENCY", "2")))
        parser.add_argument("--worker-concurrency", type=int, default=int(os.environ.get("CELERY_CONCURRENCY", "4")))
        parser.add_argument("--no-worker", action="store_true", help="Do not start a Celery worker (use separate workers).")

    def handle(self, *args, bind, web_workers, worker_concurrency, no_worker, **options):
        bin_dir = os.path.dirname(sys.executable)
        procs = []
        if not no_worker:
            worker_cmd = [os.path.join(bin_dir, "celery"), "-A", "stereoscope", "worker", "--loglevel", "INFO",
                          "--pool", "threads", "--concurrency", str(worker_concurrency), "--hostname", "embedded@%h",
                          # the embedded worker also runs Celery beat (periodic tasks, e.g. polling provider batches)
                          "--beat", "--schedule", os.path.join(str(settings.DATA_DIR), "celerybeat-schedule")]
            procs.append(subprocess.Popen(worker_cmd, cwd=settings.BASE_DIR, preexec_fn=die_with_parent))
        web_cmd = [os.path.join(bin_dir, "gunicorn"), "stereoscope.wsgi", "--bind", bind, "--workers", str(web_workers),
                   "--threads", "4", "--access-logfile", "-", "--timeout", "120"]
        procs.append(subprocess.Popen(web_cmd, cwd=settings.BASE_DIR, preexec_fn=die_with_parent))
        self.stdout.write(self.style.SUCCESS(f"Stereoscope is running on http://{bind}/  (broker: {settings.CELERY_BROKER_URL.split(':')[0]})"))

        def stop(*_):
            for proc in procs:
                if proc.poll() is None:
                    proc.send_signal(signal.SIGTERM)
            for proc in procs:
                try:
                    proc.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    proc.kill()
            sys.exit(0)

        signal.signal(signal.SIGTERM, stop)
        signal.signal(signal.SIGINT, stop)
        while all(proc.poll() is None for proc in procs):
            time.sleep(1)
        stop()
