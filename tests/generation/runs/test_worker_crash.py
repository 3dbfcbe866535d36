"""Crash safety: a real worker is killed with SIGKILL mid-run; resuming with a new worker leaves every unit
with exactly one output and calls again only the units that had none."""

import uuid

import pytest

from generation.models import GenerationRun, Output
from generation.runs import services as runs
from stereoscope.testing.workers import wait_for

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]


def test_sigkill_mid_run_then_resume(make_endpoint, make_toolkit, fake_provider, monkeypatch, celery_processes):
    from stereoscope.celery import app
    from stereoscope.models import Study

    study = Study.objects.create(name="crash")
    toolkit = make_toolkit(study, 60)
    endpoint = make_endpoint(study, max_concurrency=3)
    fake_provider.default_delay = 0.15
    queue = f"gen-{uuid.uuid4().hex[:8]}"
    monkeypatch.setattr(
        runs, "_enqueue", lambda run: app.send_task("generation.execute_run", args=[run.pk], queue=queue)
    )
    run = runs.create_run(study, name="crash", toolkit=toolkit, endpoints=[endpoint], trials=1)

    first = celery_processes.start_worker(queue)
    try:
        runs.start(run)
        assert wait_for(lambda: Output.objects.filter(run=run, status="done").count() >= 8, timeout=120)
    finally:
        celery_processes.kill(first)
    done_before = set(Output.objects.filter(run=run, status="done").values_list("pk", flat=True))
    assert 8 <= len(done_before) < 60, "the kill should land mid-run"
    assert GenerationRun.objects.get(pk=run.pk).status == "running"  # the dead worker could not finish it
    requests_before = len(fake_provider.requests)

    second = celery_processes.start_worker(queue)
    try:
        runs.resume(GenerationRun.objects.get(pk=run.pk))
        assert wait_for(lambda: GenerationRun.objects.get(pk=run.pk).status == "completed", timeout=180)
    finally:
        celery_processes.stop([second])
    outputs = Output.objects.filter(run=run)
    assert outputs.count() == 60 and outputs.filter(status="done").count() == 60
    assert len(set(outputs.values_list("item_id", "endpoint_id", "trial", "variant_key"))) == 60
    # the units finished before the crash were not called again
    again = {r["prompt"] for r in fake_provider.requests[requests_before:]}
    missing = set(Output.objects.filter(run=run).exclude(pk__in=done_before).values_list("prompt_text", flat=True))
    assert again == missing
