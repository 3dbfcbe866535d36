"""When every worker dies, health and the job pages say so within about 10 s (not after the job's 60 s lease), and a
fresh worker takes a dead worker's chunks over within about 10 s of its start (its leases are tied to its heartbeat),
with no Resume and every unit done exactly once. Real worker processes, killed with SIGKILL."""

import time
import uuid

import pytest

from generation.models import GenerationRun, Output
from generation.runs import services as runs
from stereoscope.testing.workers import wait_for

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]
# About 10 s on a quiet machine (a worker is dead 10 s after its last heartbeat). The bound only has to tell that
# apart from waiting for the job's 60 s lease (the behaviour this guards against), with room for a loaded machine.
TARGET_S = 45.0
STALLED = "Stalled — no live worker"


@pytest.fixture
def running_run(roles, make_endpoint, make_toolkit, fake_provider, monkeypatch):
    """A 60-unit run on queue `run.queue`, one call at a time; the provider answers each call in 0.5 s, so the run
    takes about 30 s."""
    from stereoscope.celery import app

    study = roles["a"]
    toolkit = make_toolkit(study, 60)
    endpoint = make_endpoint(study, max_concurrency=1)
    fake_provider.default_delay = 0.5
    queue = f"death-{uuid.uuid4().hex[:8]}"
    monkeypatch.setattr(
        runs, "_enqueue", lambda run: app.send_task("generation.execute_run", args=[run.pk], queue=queue)
    )
    run = runs.create_run(study, name="worker death", toolkit=toolkit, endpoints=[endpoint], trials=1)
    run.queue = queue
    return run


def done(run):
    return Output.objects.filter(run=run, status="done").count()


def test_health_and_the_run_page_say_stalled_within_15_s_of_the_last_worker_death(
    running_run, celery_processes, client, client_for, roles
):
    run = running_run
    page = client_for(roles["users"]["researcher"])
    url = f"/studies/{run.study_id}/runs/{run.pk}/"
    worker = celery_processes.start_worker(run.queue)
    celery_processes.wait_ready([worker])
    runs.start(run)
    assert wait_for(lambda: done(run) >= 3, timeout=120), "the worker should be under way"
    assert client.get("/api/health/").status_code == 200  # a live worker on a running job: ok
    assert STALLED not in page.get(url).content.decode()
    celery_processes.kill(worker)
    killed = time.monotonic()
    assert GenerationRun.objects.get(pk=run.pk).status == "running"
    assert done(run) < 60, "the kill should land mid-run"

    degraded = wait_for(lambda: client.get("/api/health/").status_code == 503 and time.monotonic(), timeout=120)
    stalled = wait_for(lambda: STALLED in page.get(url).content.decode() and time.monotonic(), timeout=120)
    assert degraded and stalled, "health and the run page should notice the dead worker"
    assert degraded - killed <= TARGET_S, f"health said ok for {degraded - killed:.1f} s after the last worker died"
    assert stalled - killed <= TARGET_S, f"the run page said running for {stalled - killed:.1f} s"
    health = client.get("/api/health/").json()
    assert health["workers"]["live"] == 0 and health["jobs"]["stalled_by_kind"] == {"generation run": 1}


def test_a_fresh_worker_takes_over_within_15_s_and_finishes_without_resume(
    running_run, celery_processes, fake_provider
):
    run = running_run
    first = celery_processes.start_worker(run.queue)
    celery_processes.wait_ready([first])
    runs.start(run)
    assert wait_for(lambda: done(run) >= 3, timeout=120), "the worker should be under way"
    celery_processes.kill(first)
    before = done(run)
    assert before < 60, "the kill should land mid-run"

    second = celery_processes.start_worker(run.queue)  # no Resume: its heartbeat's sweep finds the run
    started = time.monotonic()
    progressed = wait_for(lambda: done(run) > before and time.monotonic(), timeout=120)
    assert progressed, "the fresh worker never took the dead worker's chunks over"
    assert progressed - started <= TARGET_S, f"the fresh worker waited {progressed - started:.1f} s to progress"
    assert wait_for(lambda: GenerationRun.objects.get(pk=run.pk).status == "completed", timeout=240)
    celery_processes.stop([second])
    outputs = Output.objects.filter(run=run)
    assert outputs.count() == 60 and outputs.filter(status="done").count() == 60
    assert len(set(outputs.values_list("item_id", "endpoint_id", "trial", "variant_key"))) == 60
