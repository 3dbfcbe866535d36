"""Batch mode after a crash, with no one pressing Resume: a job whose worker died after submitting its batches but
before finishing the job is finished when its last batch ends (a dead worker's lease does not hold it back), or by
a worker's sweep once that lease is gone."""

import uuid
from datetime import timedelta

import pytest
from django.utils import timezone

from generation.models import GenerationRun, Output, ProviderBatch
from generation.runs import batches
from generation.runs import services as runs
from stereoscope import jobs
from stereoscope.models import WorkerHeartbeat

from .test_batch_mode import PARAMS, batch_run

pytestmark = pytest.mark.django_db


@pytest.fixture
def batch_endpoint(make_endpoint):
    def make(study, provider="openai", **fields):
        return make_endpoint(study, provider, batch_enabled=True, default_params=dict(PARAMS), **fields)

    return make


def held_by_a_dead_worker(run):
    """The run's state when its worker was SIGKILLed after submitting every batch, before its pass ended: the job
    row still carries that worker's lease (renewed 20 s ago, valid 40 s more), and its heartbeat stopped 30 s ago."""
    now = timezone.now()
    WorkerHeartbeat.objects.create(
        hostname="celery@dead", pid=1, instance="deadbeef", last_seen=now - timedelta(seconds=30)
    )
    GenerationRun.objects.filter(pk=run.pk).update(
        status="running", lease_token=f"{uuid.uuid4().hex}@deadbeef", lease_expires_at=now + timedelta(seconds=40)
    )


def test_a_dead_workers_lease_does_not_keep_a_finished_batch_run_running(
    study, batch_endpoint, make_toolkit, fake_provider
):
    run = batch_run(study, make_toolkit(study, 3), [batch_endpoint(study)])
    fake_provider.batches.hold = True
    runs.start(run)
    assert batches.open_count("generation.run", run.pk) == 1
    held_by_a_dead_worker(run)
    assert not jobs.is_live(GenerationRun.objects.get(pk=run.pk))
    fake_provider.batches.release()
    batches.poll_open_batches()
    batches.poll_open_batches()
    assert Output.objects.filter(run=run, status="done").count() == 3
    assert GenerationRun.objects.get(pk=run.pk).status == "completed"


def test_the_sweep_finishes_a_job_whose_worker_died_before_finishing_it(
    study, batch_endpoint, make_toolkit, fake_provider, monkeypatch
):
    from stereoscope.celery import app

    run = batch_run(study, make_toolkit(study, 3), [batch_endpoint(study)])
    fake_provider.batches.hold = True
    runs.start(run)
    # a live executor holds the run while its batch ends (so the poller leaves the finishing to it) ... and dies
    GenerationRun.objects.filter(pk=run.pk).update(
        status="running", lease_token="cli-run", lease_expires_at=timezone.now() + timedelta(seconds=60)
    )
    fake_provider.batches.release()
    batches.poll_open_batches()
    batches.poll_open_batches()
    assert Output.objects.filter(run=run, status="done").count() == 3
    assert GenerationRun.objects.get(pk=run.pk).status == "running"
    GenerationRun.objects.filter(pk=run.pk).update(lease_expires_at=timezone.now() - timedelta(seconds=1))

    sent = []
    monkeypatch.setattr(app, "send_task", lambda name, args, **options: sent.append((name, args)))
    assert jobs.sweep() == [("generation.run", run.pk)]
    assert sent == [("generation.execute_run", [run.pk])]
    assert jobs.sweep() == []  # claimed once
    runs.execute(run.pk)
    assert GenerationRun.objects.get(pk=run.pk).status == "completed"
    assert jobs.sweep() == []


# -- a submission cut short, and requests that came back unanswered -------------------------------------------------


class Crash(BaseException):
    """The worker dies (SIGKILL) mid-upload: nothing reached the provider."""


def test_a_cut_off_submission_is_released_at_once_and_sent_again_without_resume(
    study, batch_endpoint, make_toolkit, fake_provider, monkeypatch
):
    from generation.runs.providers.batch_api import OpenAIBatchAPI

    run = batch_run(study, make_toolkit(study, 3), [batch_endpoint(study)])
    real_submit = OpenAIBatchAPI.submit

    def crash(self, lines, metadata):
        raise Crash

    monkeypatch.setattr(OpenAIBatchAPI, "submit", crash)
    with pytest.raises(Crash):
        runs.start(run)
    monkeypatch.setattr(OpenAIBatchAPI, "submit", real_submit)
    row = ProviderBatch.objects.get(job_id=run.pk)
    assert row.status == "submitting" and not fake_provider.batches.created
    held_by_a_dead_worker(run)

    batches.poll_open_batches()  # the first poll after the crash: no grace period to wait out
    row.refresh_from_db()
    assert row.status == "failed" and "cut short" in row.error
    assert timezone.now() - row.created_at < timedelta(minutes=2)
    # its units went out again in a new batch at once, with no Resume
    assert [len(items) for _, _, items in fake_provider.batches.created] == [3]
    batches.poll_open_batches()
    batches.poll_open_batches()
    assert Output.objects.filter(run=run, status="done").count() == 3
    assert GenerationRun.objects.get(pk=run.pk).status == "completed"


def test_a_submitting_row_of_a_live_worker_is_left_to_it(
    study, batch_endpoint, make_toolkit, fake_provider, monkeypatch
):
    from generation.runs.providers.batch_api import OpenAIBatchAPI

    run = batch_run(study, make_toolkit(study, 2), [batch_endpoint(study)])
    monkeypatch.setattr(OpenAIBatchAPI, "submit", lambda self, lines, metadata: (_ for _ in ()).throw(Crash()))
    with pytest.raises(Crash):
        runs.start(run)
    now = timezone.now()
    WorkerHeartbeat.objects.create(hostname="celery@alive", pid=2, instance="a11ce", last_seen=now)
    GenerationRun.objects.filter(pk=run.pk).update(
        status="running", lease_token=f"{uuid.uuid4().hex}@a11ce", lease_expires_at=now - timedelta(seconds=5)
    )  # a long upload: the lease lapsed, but the worker's heartbeat goes on
    monkeypatch.setattr(OpenAIBatchAPI, "find", lambda *a, **k: pytest.fail("looked up while its worker uploads"))
    batches.poll_open_batches()
    assert ProviderBatch.objects.get(job_id=run.pk).status == "submitting"


def test_errored_and_expired_requests_are_sent_again_without_resume(study, batch_endpoint, make_toolkit, fake_provider):
    toolkit = make_toolkit(study, 4, texts=["fine one", "bad one", "late one", "fine two"])
    fake_provider.script([{"status": 500, "message": "overloaded"}], match="bad")
    fake_provider.script([{"expire": True}], match="late")
    run = batch_run(study, toolkit, [batch_endpoint(study, "anthropic")])
    runs.start(run)
    batches.poll_open_batches()  # the first batch ends: 2 answered, 2 back unanswered and sent again at once
    assert [len(items) for _, _, items in fake_provider.batches.created] == [4, 2]
    batches.poll_open_batches()
    outputs = Output.objects.filter(run=run)
    assert outputs.filter(status="done").count() == 4
    assert GenerationRun.objects.get(pk=run.pk).status == "completed"
    assert list(outputs.get(prompt_text="bad one").calls.order_by("attempt").values_list("attempt", flat=True)) == [
        1,
        2,
    ]


def test_a_unit_at_its_retry_limit_fails_with_the_reason(study, batch_endpoint, make_toolkit, fake_provider):
    toolkit = make_toolkit(study, 2, texts=["fine one", "bad one"])
    fake_provider.script([{"status": 500, "message": "overloaded"}] * 5, match="bad")
    run = batch_run(study, toolkit, [batch_endpoint(study, max_attempts=2)])
    runs.start(run)
    for _ in range(4):
        batches.poll_open_batches()
    assert [len(items) for _, _, items in fake_provider.batches.created] == [2, 1]  # the limit is 2 attempts
    bad = Output.objects.get(run=run, prompt_text="bad one")
    assert bad.status == "failed" and "Gave up after 2 attempts" in bad.error and "overloaded" in bad.error
    run.refresh_from_db()
    assert run.status == "completed" and "1 units failed" in run.message
