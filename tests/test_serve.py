"""`manage.py serve` (what `make run` ends in) brings up gunicorn and one Celery worker that /healthz sees."""
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from django.conf import settings

from .conftest import subprocess_database_url

ROOT = Path(__file__).resolve().parent.parent
pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_serve_starts_web_and_one_live_worker():
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k not in {"CELERY_TASK_ALWAYS_EAGER", "DJANGO_ALLOW_ASYNC_UNSAFE"}}
    env.update(DATABASE_URL=subprocess_database_url(), CELERY_BROKER_URL=settings.CELERY_BROKER_URL,
               WORKER_HEARTBEAT_SECONDS="0.5", STEREOSCOPE_DATA_DIR=str(settings.DATA_DIR))
    proc = subprocess.Popen([sys.executable, "manage.py", "serve", "--bind", f"127.0.0.1:{port}", "--web-workers", "1",
                             "--worker-concurrency", "1"], cwd=ROOT, env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)
    report = None
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz?format=json", timeout=2) as response:
                    report = json.load(response)
                if report["workers"]["live"] == 1:
                    break
            except OSError:
                pass
            time.sleep(0.5)
        assert report is not None, "the web server never answered"
        assert report["database"]["ok"] and report["broker"]["ok"]
        assert report["workers"]["live"] == 1, report
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)
    time.sleep(1)
    with pytest.raises(OSError):
        urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=2)
