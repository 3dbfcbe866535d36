"""Start the web server and one Celery worker beside it: the embedded default's production-like path.

`serve` supervises the worker: when it dies (SIGKILL, out of memory) it is restarted with a back-off and the
reason is logged; the web server keeps answering. Only the web server's death (or SIGTERM/SIGINT) stops `serve`.
"""

import logging
import os
import signal
import subprocess
import sys
import time

from django.conf import settings
from django.core.management.base import BaseCommand

from stereoscope.process_lifetime import die_with_parent

log = logging.getLogger("stereoscope.serve")
BACKOFF_BASE_S = 1.0
BACKOFF_MAX_S = 30.0
HEALTHY_RUN_S = 60.0  # a worker that lived this long resets the back-off


def restart_delay(failures, base=BACKOFF_BASE_S, cap=BACKOFF_MAX_S):
    """Seconds to wait before the n-th restart in a row: 1, 2, 4, ... up to the cap."""
    return min(cap, base * 2 ** max(0, failures - 1))


def describe_exit(returncode):
    if returncode is not None and returncode < 0:
        try:
            return f"killed by {signal.Signals(-returncode).name}"
        except ValueError:
            return f"killed by signal {-returncode}"
    return f"exited with status {returncode}"


def worker_environment(environ=None):
    """The worker's environment: serve's own, without Django's system checks at the worker's start (serve ran them
    for the same settings before starting anything; they import every URL module and view, seconds of each
    restart)."""
    return {**(os.environ if environ is None else environ), "CELERY_SKIP_CHECKS": "1"}


class Command(BaseCommand):
    help = "Serve Stereoscope with gunicorn and start one Celery worker beside it (restarted if it dies)."

    def add_arguments(self, parser):
        parser.add_argument("--bind", default=os.environ.get("BIND", "127.0.0.1:8000"))
        parser.add_argument("--web-workers", type=int, default=int(os.environ.get("WEB_CONCURRENCY", "2")))
        parser.add_argument("--worker-concurrency", type=int, default=int(os.environ.get("CELERY_CONCURRENCY", "4")))
        parser.add_argument(
            "--no-worker", action="store_true", help="Do not start a Celery worker (use separate workers)."
        )

    def log(self, message):
        log.warning(message)
        self.stderr.write(f"[serve] {message}")
        self.stderr.flush()

    def handle(self, *args, bind, web_workers, worker_concurrency, no_worker, **options):
        bin_dir = os.path.dirname(sys.executable)
        worker_cmd = [
            os.path.join(bin_dir, "celery"),
            "-A",
            "stereoscope",
            "worker",
            "--loglevel",
            "INFO",
            "--pool",
            "threads",
            "--concurrency",
            str(worker_concurrency),
            "--hostname",
            "embedded@%h",
            # the embedded worker also runs Celery beat (periodic tasks, e.g. polling provider batches)
            "--beat",
            "--schedule",
            os.path.join(str(settings.DATA_DIR), "celerybeat-schedule"),
        ]
        web_cmd = [
            os.path.join(bin_dir, "gunicorn"),
            "stereoscope.wsgi",
            "--bind",
            bind,
            "--workers",
            str(web_workers),
            "--threads",
            "4",
            "--access-logfile",
            "-",
            "--timeout",
            "120",
        ]

        def start_worker():
            return subprocess.Popen(
                worker_cmd, cwd=settings.BASE_DIR, env=worker_environment(), preexec_fn=die_with_parent
            )

        state = {"worker": None if no_worker else start_worker(), "stopping": False}
        web = subprocess.Popen(web_cmd, cwd=settings.BASE_DIR, preexec_fn=die_with_parent)
        broker = settings.CELERY_BROKER_URL.split(":")[0]
        self.stdout.write(self.style.SUCCESS(f"Stereoscope is running on http://{bind}/  (broker: {broker})"))

        def stop(*_, status=0):
            state["stopping"] = True
            procs = [p for p in (state["worker"], web) if p is not None]
            for proc in procs:
                if proc.poll() is None:
                    proc.send_signal(signal.SIGTERM)
            for proc in procs:
                try:
                    proc.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    proc.kill()
            sys.exit(status)

        signal.signal(signal.SIGTERM, stop)
        signal.signal(signal.SIGINT, stop)
        failures, started, restart_at = 0, time.monotonic(), None
        while web.poll() is None:
            worker = state["worker"]
            if worker is not None and restart_at is None and worker.poll() is not None and not state["stopping"]:
                failures = 1 if time.monotonic() - started >= HEALTHY_RUN_S else failures + 1
                delay = restart_delay(failures)
                self.log(
                    f"the worker (pid {worker.pid}) {describe_exit(worker.returncode)}; "
                    f"restarting it in {delay:g} s (restart {failures} in a row)"
                )
                restart_at = time.monotonic() + delay
            if restart_at is not None and time.monotonic() >= restart_at:
                state["worker"], started, restart_at = start_worker(), time.monotonic(), None
                self.log(f"started a new worker (pid {state['worker'].pid})")
            time.sleep(0.5)
        self.log(f"the web server {describe_exit(web.returncode)}; stopping")
        stop(status=1)
