"""A real Celery worker process picks a task from the configured broker (Redis in the PostgreSQL run,
the embedded filesystem broker otherwise) and writes its result to the test database."""

import os
import uuid

import pytest
from django.conf import settings

from stereoscope.testing.workers import wait_for

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]


def test_worker_runs_task_from_broker_and_writes_to_database(client, celery_processes):
    from stereoscope.celery import app
    from stereoscope.models import ActivityEvent, Study, WorkerHeartbeat

    expected = "redis" if os.environ.get("CELERY_BROKER_URL", "").startswith("redis") else "filesystem"
    assert settings.CELERY_BROKER_URL.split(":")[0] == expected
    study = Study.objects.create(name="Worker probe")
    queue, token = f"probe-{uuid.uuid4().hex[:8]}", uuid.uuid4().hex
    worker = celery_processes.start_worker(queue)
    try:
        app.send_task("stereoscope.record_probe", args=[study.pk, token], queue=queue)
        row = wait_for(lambda: ActivityEvent.objects.filter(study=study, verb="worker probe", target=token).first())
        assert row is not None, "the worker did not write the probe row"
        assert wait_for(lambda: WorkerHeartbeat.objects.filter(hostname=worker.hostname).exists(), timeout=20)
        health = client.get("/healthz?format=json").json()
        assert health["workers"]["live"] == 1
        assert health["workers"]["list"][0]["hostname"] == worker.hostname
        assert health["broker"]["transport"] == expected and health["broker"]["ok"]
    finally:
        celery_processes.stop([worker])
    output = celery_processes.log(worker)
    assert "ready" in output, output[-2000:]
    assert not WorkerHeartbeat.objects.filter(hostname=worker.hostname).exists(), "a stopped worker leaves no heartbeat"
