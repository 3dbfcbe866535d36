"""A real Celery worker process picks a task from the configured broker (Redis in the PostgreSQL run,
the embedded filesystem broker otherwise) and writes its result to the test database."""

import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from django.conf import settings

from .conftest import subprocess_database_url

ROOT = Path(__file__).resolve().parent.parent
pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]


def start_worker(queue, hostname):
    env = {k: v for k, v in os.environ.items() if k != "CELERY_TASK_ALWAYS_EAGER"}
    env.update(
        DATABASE_URL=subprocess_database_url(),
        CELERY_BROKER_URL=settings.CELERY_BROKER_URL,
        WORKER_HEARTBEAT_SECONDS="0.5",
        STEREOSCOPE_DATA_DIR=str(settings.DATA_DIR),
    )
    cmd = [
        sys.executable,
        "-m",
        "celery",
        "-A",
        "stereoscope",
        "worker",
        "--pool",
        "solo",
        "-Q",
        queue,
        "--hostname",
        hostname,
        "--loglevel",
        "INFO",
        "--without-mingle",
        "--without-gossip",
    ]
    return subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def wait_for(predicate, timeout=60):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.25)
    return None


def test_worker_runs_task_from_broker_and_writes_to_database(client):
    from stereoscope.celery import app
    from stereoscope.models import ActivityEvent, Study, WorkerHeartbeat

    expected = "redis" if os.environ.get("CELERY_BROKER_URL", "").startswith("redis") else "filesystem"
    assert settings.CELERY_BROKER_URL.split(":")[0] == expected
    study = Study.objects.create(name="Worker probe")
    queue, token = f"probe-{uuid.uuid4().hex[:8]}", uuid.uuid4().hex
    hostname = f"probe-{token[:6]}@test"
    worker = start_worker(queue, hostname)
    try:
        app.send_task("stereoscope.record_probe", args=[study.pk, token], queue=queue)
        row = wait_for(lambda: ActivityEvent.objects.filter(study=study, verb="worker probe", target=token).first())
        assert row is not None, "the worker did not write the probe row"
        assert wait_for(lambda: WorkerHeartbeat.objects.filter(hostname=hostname).exists(), timeout=20)
        health = client.get("/healthz?format=json").json()
        assert health["workers"]["live"] == 1
        assert health["workers"]["list"][0]["hostname"] == hostname
        assert health["broker"]["transport"] == expected and health["broker"]["ok"]
    finally:
        worker.terminate()
        try:
            output = worker.communicate(timeout=30)[0]
        except subprocess.TimeoutExpired:
            worker.kill()
            output = worker.communicate()[0]
    assert "ready" in output, output[-2000:]
    assert not WorkerHeartbeat.objects.filter(hostname=hostname).exists(), "a stopped worker leaves no heartbeat"
