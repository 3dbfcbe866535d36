"""A plain `celery -A stereoscope worker` on Redis rides out a broker restart: a private redis-server (never the
shared one) is killed under the worker and started again on the same port; the worker does not exit, reconnects,
and runs the next task, and nothing fails on the way (before, the gossip step's restart after the lost connection
raised AttributeError inside kombu's Redis transport, and in the field the worker exited 1 with "Unrecoverable
error: AttributeError ... 'hostname'" when Redis came back)."""

import uuid

import pytest
from celery import Celery

from stereoscope.testing.redis_server import PrivateRedis
from stereoscope.testing.workers import CeleryProcesses, wait_for
from tests.conftest import subprocess_database_url

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]


def probe_written(study, token):
    from stereoscope.models import ActivityEvent

    return ActivityEvent.objects.filter(study=study, verb="worker probe", target=token).exists()


def test_a_worker_rides_out_a_redis_restart(tmp_path, settings, monkeypatch):
    from stereoscope.models import Study

    monkeypatch.delenv("CELERY_BROKER_URL", raising=False)  # Celery prefers it to the sender's own broker

    study = Study.objects.create(name="broker restart")
    queue = f"restart-{uuid.uuid4().hex[:8]}"
    with PrivateRedis(tmp_path / "redis") as redis:
        broker = redis.url(0)
        sender = Celery("probe", broker=broker, set_as_current=False)  # the suite's app stays the current one
        sender.conf.broker_connection_retry_on_startup = True
        env = {"STEREOSCOPE_DATA_DIR": settings.DATA_DIR, "REDIS_URL": broker}
        with CeleryProcesses(
            broker=broker, database_url=subprocess_database_url(), env=env, log_dir=tmp_path
        ) as celery:
            # started as the README and docker-compose.yml start it (prefork pool), not the tests' solo pool
            worker = celery._start("plain-worker", ["worker", "-Q", queue, "--concurrency", "1", "-n", f"{queue}@test"])
            worker.hostname = f"{queue}@test"
            celery.wait_ready([worker])
            first = uuid.uuid4().hex
            sender.send_task("stereoscope.record_probe", args=[study.pk, first], queue=queue)
            assert wait_for(lambda: probe_written(study, first), timeout=60), celery.log(worker)[-3000:]

            redis.stop()
            assert wait_for(lambda: "Connection to broker lost" in celery.log(worker), timeout=60), celery.log(worker)[
                -3000:
            ]
            redis.start()
            second = uuid.uuid4().hex
            sender.send_task("stereoscope.record_probe", args=[study.pk, second], queue=queue)
            written = wait_for(lambda: probe_written(study, second) or worker.poll() is not None, timeout=120)
            log = celery.log(worker)
            assert worker.poll() is None, f"the worker exited ({worker.returncode}):\n{log[-4000:]}"
            assert written and probe_written(study, second), log[-4000:]
            assert "Unrecoverable error" not in log and "AttributeError" not in log, log[-4000:]
            assert "mingle: searching" not in log  # runs without gossip, mingle and event heartbeats
