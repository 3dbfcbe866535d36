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

from tests.conftest import subprocess_database_url

ROOT = Path(__file__).resolve().parents[2]
pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_serve_starts_web_and_one_live_worker():
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k not in {"CELERY_TASK_ALWAYS_EAGER", "DJANGO_ALLOW_ASYNC_UNSAFE"}}
    env.update(
        DATABASE_URL=subprocess_database_url(),
        CELERY_BROKER_URL=settings.CELERY_BROKER_URL,
        WORKER_HEARTBEAT_SECONDS="0.5",
        STEREOSCOPE_DATA_DIR=str(settings.DATA_DIR),
    )
    proc = subprocess.Popen(
        [
            sys.executable,
            "manage.py",
            "serve",
            "--bind",
            f"127.0.0.1:{port}",
            "--web-workers",
            "1",
            "--worker-concurrency",
            "1",
        ],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
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


def get_health(port):
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz?format=json", timeout=2) as response:
            return json.load(response)
    except urllib.error.HTTPError as exc:  # degraded answers 503 with the same JSON
        return json.load(exc)
    except OSError:
        return None


def wait_for(predicate, seconds):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.5)
    return None


def test_serve_restarts_a_killed_worker_and_keeps_serving(tmp_path):
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k not in {"CELERY_TASK_ALWAYS_EAGER", "DJANGO_ALLOW_ASYNC_UNSAFE"}}
    env.update(
        DATABASE_URL=subprocess_database_url(),
        CELERY_BROKER_URL=settings.CELERY_BROKER_URL,
        WORKER_HEARTBEAT_SECONDS="0.5",
        STEREOSCOPE_DATA_DIR=str(settings.DATA_DIR),
    )
    log = tmp_path / "serve.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            [
                sys.executable,
                "manage.py",
                "serve",
                "--bind",
                f"127.0.0.1:{port}",
                "--web-workers",
                "1",
                "--worker-concurrency",
                "1",
            ],
            cwd=ROOT,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        report = wait_for(lambda: (r := get_health(port)) and r["workers"]["live"] == 1 and r, 60)
        assert report, "serve never showed a live worker"
        first_pid = report["workers"]["list"][0]["pid"]
        os.kill(first_pid, signal.SIGKILL)  # as the out-of-memory killer would
        answers = []

        def new_worker():
            r = get_health(port)
            answers.append(r is not None)
            return r and r["workers"]["live"] == 1 and r["workers"]["list"][0]["pid"] != first_pid and r

        report = wait_for(new_worker, 60)
        assert report, f"no new worker came up: {log.read_text(errors='replace')[-2000:]}"
        assert all(answers), "the web server stopped answering while the worker was down"
        assert proc.poll() is None, "serve exited"
        text = log.read_text(errors="replace")
        assert "SIGKILL" in text and "restarting" in text, text[-2000:]
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)
    with pytest.raises(OSError):
        urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=2)


def test_restart_backoff_doubles_up_to_a_cap_and_names_the_signal():
    from stereoscope.management.commands.serve import describe_exit, restart_delay

    assert [restart_delay(n) for n in range(1, 8)] == [1, 2, 4, 8, 16, 30, 30]
    assert describe_exit(-9) == "killed by SIGKILL" and describe_exit(1) == "exited with status 1"
