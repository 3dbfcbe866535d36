"""Batch mode with real processes: a 1,000-unit run split into 3 batches by a Celery worker, the worker killed with
SIGKILL while the batches are open at the provider, a new worker started: Celery beat's polls find the open
batches again by their ids, every unit is done exactly once, no batch is submitted twice, and the cost is at batch
prices."""

import uuid
from decimal import Decimal

import pytest

from generation.models import GenerationRun, Output, ProviderBatch, ProviderCall
from generation.runs import services as runs
from stereoscope.testing.workers import wait_for

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]


def test_batch_run_survives_a_killed_worker(
    make_endpoint, make_toolkit, fake_provider, monkeypatch, tmp_path, celery_processes
):
    from stereoscope.celery import app
    from stereoscope.models import Study

    queue = f"batch-{uuid.uuid4().hex[:8]}"
    # the worker and beat read these from the environment
    monkeypatch.setenv("BATCH_MAX_REQUESTS", "334")
    monkeypatch.setenv("BATCH_POLL_SECONDS", "1")
    monkeypatch.setenv("BATCH_POLL_QUEUE", queue)
    study = Study.objects.create(name="batch crash")
    toolkit = make_toolkit(study, 500)
    endpoint = make_endpoint(
        study,
        "openai",
        batch_enabled=True,
        input_price_per_mtok=4,
        output_price_per_mtok=10,
        default_params={"max_tokens": 50, "seed": 3},
    )
    monkeypatch.setattr(
        runs, "_enqueue", lambda run: app.send_task("generation.execute_run", args=[run.pk], queue=queue)
    )
    run = runs.create_run(
        study, name="batch crash", toolkit=toolkit, endpoints=[endpoint], trials=2, execution_mode="batch"
    )
    fake_provider.batches.hold = True  # the provider keeps the batches in progress until released

    beat = celery_processes.start_beat(tmp_path / "beat-schedule")
    first = celery_processes.start_worker(queue)
    try:
        runs.start(run)
        assert wait_for(
            lambda: ProviderBatch.objects.filter(job_id=run.pk, status="in_progress").count() == 3, timeout=180
        ), "the worker should submit 3 batches and poll them"
    finally:
        celery_processes.kill(first)
    try:
        assert GenerationRun.objects.get(pk=run.pk).status == "running"
        assert Output.objects.filter(run=run, status="done").count() == 0
        assert len(fake_provider.batches.created) == 3
        fake_provider.batches.release()

        second = celery_processes.start_worker(queue)
        try:
            assert wait_for(lambda: GenerationRun.objects.get(pk=run.pk).status == "completed", timeout=240)
        finally:
            celery_processes.stop([second])
    finally:
        celery_processes.stop([beat])

    outputs = Output.objects.filter(run=run)
    assert outputs.count() == 1000 and outputs.filter(status="done").count() == 1000
    calls = ProviderCall.objects.filter(output__run=run)
    assert calls.count() == 1000 and calls.filter(ok=True).count() == 1000
    assert len(set(calls.values_list("output_id", flat=True))) == 1000  # every unit exactly once
    created = fake_provider.batches.created
    assert [len(items) for _, _, items in created] == [334, 334, 332]  # no batch submitted twice
    assert sorted(cid for _, _, items in created for cid, _ in items) == sorted(
        f"output-{pk}" for pk in outputs.values_list("pk", flat=True)
    )
    assert not fake_provider.requests  # nothing ran live
    rows = ProviderBatch.objects.filter(job_id=run.pk)
    assert set(rows.values_list("status", flat=True)) == {"ended"}
    assert set(calls.values_list("batch_id", flat=True)) == set(rows.values_list("provider_batch_id", flat=True))
    # cost at batch prices: half of 4 and 10 USD per million tokens
    tokens_in = sum(outputs.values_list("input_tokens", flat=True))
    tokens_out = sum(outputs.values_list("output_tokens", flat=True))
    total = sum(outputs.values_list("cost_usd", flat=True))
    assert total == pytest.approx(Decimal(tokens_in * 2 + tokens_out * 5) / Decimal(1_000_000), abs=Decimal("0.00001"))
    assert sum(r.cost_usd for r in rows) == total
