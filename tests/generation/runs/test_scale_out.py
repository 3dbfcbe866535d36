"""One job spread over several worker processes, one of them killed with SIGKILL mid-job, and nobody presses
anything: the live workers' sweep picks up the dead worker's chunks once their lease expires; every unit is done
exactly once, and the product has an attempt row for every request the provider received."""

import os
import time
import uuid

import pytest
from django.db.models import Count

from generation.models import GenerationRun, Output, ProviderCall
from generation.runs import services as runs
from stereoscope import jobs
from stereoscope.testing.workers import wait_for

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]

UNITS = int(os.environ.get("SCALE_OUT_UNITS", "2000"))
LEASE = 4
CHUNK = 50
CONCURRENCY = 16


def in_flight_on(run, process):
    """Whether the worker process holds a leased chunk of the run with attempts sent and not yet answered."""
    from django.utils import timezone

    from stereoscope.jobs.models import JobChunk

    held = JobChunk.objects.filter(
        kind=runs.RUN_JOB.name,
        job_id=run.pk,
        status="pending",
        worker__endswith=f":{process.pid}",
        lease_expires_at__gt=timezone.now(),
    )
    units = [unit for chunk_units in held.values_list("units", flat=True) for unit in chunk_units]
    return ProviderCall.objects.filter(output_id__in=units, outcome="unknown").exists()


def test_three_workers_one_killed_job_heals_without_anyone(
    make_endpoint, make_toolkit, fake_provider, monkeypatch, celery_processes
):
    from stereoscope.celery import app
    from stereoscope.models import Study

    settings = {"JOB_LEASE_SECONDS": LEASE, "JOB_CHUNK_SIZE": CHUNK, "JOB_WORKER_CONCURRENCY": CONCURRENCY}
    for name, value in settings.items():
        monkeypatch.setenv(name, str(value))  # read by the worker processes
    study = Study.objects.create(name="scale out")
    toolkit = make_toolkit(study, UNITS // 5)
    endpoint = make_endpoint(study, max_concurrency=64)
    fake_provider.default_delay = 0.1
    queue = f"scale-{uuid.uuid4().hex[:8]}"
    monkeypatch.setattr(
        runs, "_enqueue", lambda run: app.send_task("generation.execute_run", args=[run.pk], queue=queue)
    )
    run = runs.create_run(study, name="scale out", toolkit=toolkit, endpoints=[endpoint], trials=5)

    celery_processes.loglevel = "WARNING"  # 2,000 units of INFO lines are noise
    workers = celery_processes.start_workers(3, queue)
    try:
        celery_processes.wait_ready(workers, timeout=60)
        t0 = time.monotonic()
        runs.start(run)
        # all three work on the one job at once
        assert wait_for(
            lambda: (
                len(
                    {
                        w["worker"]
                        for w in (GenerationRun.objects.get(pk=run.pk).progress or {}).get("workers", {}).values()
                    }
                )
                == 3
            ),
            timeout=60,
        )
        assert wait_for(lambda: Output.objects.filter(run=run, status="done").count() >= UNITS // 4, timeout=120)
        # Killed while it has requests in flight (on a loaded machine its lease may have lapsed and its chunks gone
        # to the others for a while): the state is waited for, not assumed.
        assert wait_for(lambda: in_flight_on(run, workers[0]), timeout=120), "the first worker never had calls out"
        celery_processes.kill(workers[0])
        timing = {"to_kill_s": round(time.monotonic() - t0, 1)}
        assert Output.objects.filter(run=run, status="done").count() < UNITS, "the kill should land mid-job"
        healed = wait_for(lambda: GenerationRun.objects.get(pk=run.pk).status == "completed", timeout=240)
        timing["total_s"] = round(time.monotonic() - t0, 1)
    finally:
        celery_processes.stop(workers)
        logs = [celery_processes.log(worker)[-3000:] for worker in workers]
    assert healed, (jobs.chunk_counts(runs.RUN_JOB, run.pk), GenerationRun.objects.values().get(pk=run.pk), logs)
    outputs = Output.objects.filter(run=run)
    assert outputs.count() == UNITS and outputs.filter(status="done").count() == UNITS
    calls = ProviderCall.objects.filter(study=study)
    answered = calls.filter(outcome="ok").values("output_id").annotate(n=Count("id"))
    assert len(answered) == UNITS and {row["n"] for row in answered} == {1}, "every unit answered exactly once"
    assert calls.filter(outcome="unknown").exists(), "the killed worker's in-flight attempts stay on record"
    # Every request names its attempt row (header X-Stereoscope-Attempt), so the provider's log and the rows match
    # one to one. A row counts as sent unless it is "unknown" and the provider never received its id: such a row
    # was committed by the killed worker before its request went out. A chunk's first attempts are committed
    # together before its requests (issue 36), so these are at most the units of the chunks it held (the one it
    # worked on and the next, taken while the last units of the first were still starting) and the retries it
    # was opening: never a request without its row, and never one sent twice.
    received_ids = [int(r["attempt"]) for r in fake_provider.requests]
    assert len(set(received_ids)) == len(received_ids), "no attempt row was sent twice"
    rows = dict(calls.values_list("pk", "outcome"))
    assert set(received_ids) <= set(rows), "every request the provider received has its attempt row"
    answered_or_failed = {pk for pk, outcome in rows.items() if outcome != "unknown"}
    assert answered_or_failed <= set(received_ids), "a row with an answer or error was received"
    never_sent = {pk for pk, outcome in rows.items() if outcome == "unknown"} - set(received_ids)
    assert len(never_sent) <= 2 * CHUNK + CONCURRENCY, "only units of the killed worker's chunks can be unsent"
    sent_rows = calls.exclude(pk__in=never_sent)
    received = len(fake_provider.requests)
    assert received == sent_rows.count(), (received, sent_rows.count(), len(never_sent))
    print(
        f"timing: {timing}; attempt rows {calls.count()}, received {received}, "
        f"unknown {calls.filter(outcome='unknown').count()} (never sent {len(never_sent)})"
    )
