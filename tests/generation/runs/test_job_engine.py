"""The job engine (stereoscope/jobs): chunk leases, cancel, the sweep that heals jobs whose workers died,
the health check of waiting jobs, and attempt rows written before their request is sent."""

from datetime import timedelta

import pytest
from django.utils import timezone

from generation.models import GenerationRun, Output, ProviderCall
from generation.runs import services as runs
from stereoscope import jobs
from stereoscope.jobs import ChunkSource, JobChunk

pytestmark = pytest.mark.django_db


@pytest.fixture
def run(make_endpoint, make_toolkit, settings, monkeypatch):
    from stereoscope.models import Study

    settings.JOB_CHUNK_SIZE = 4
    study = Study.objects.create(name="engine")
    run = runs.create_run(study, name="r", toolkit=make_toolkit(study, 10), endpoints=[make_endpoint(study)], trials=1)
    monkeypatch.setattr(runs, "_enqueue", lambda r: None)  # nothing is sent; the tests drive the engine
    return run


def test_queue_plans_pending_units_into_chunks(run):
    runs.start(run)
    chunks = list(JobChunk.objects.filter(kind="generation.run", job_id=run.pk).order_by("number"))
    assert [c.size for c in chunks] == [4, 4, 2]
    outputs = Output.objects.filter(run=run).values_list("pk", flat=True)
    assert sorted(k for c in chunks for k in c.units) == sorted(outputs)
    run.refresh_from_db()
    assert run.status == "queued" and run.lease_expires_at > timezone.now()


def test_a_chunk_is_leased_by_one_worker_at_a_time_and_taken_over_when_expired(run):
    runs.start(run)
    job = runs.RUN_JOB.get(run.pk)
    first = ChunkSource(runs.RUN_JOB, job, "token-a", lambda: False)
    second = ChunkSource(runs.RUN_JOB, job, "token-b", lambda: False)
    a = first.take()
    b = second.take()
    assert {u.payload for u in a}.isdisjoint({u.payload for u in b})
    c = second.take()
    assert second.take() == [] and first.take() == []  # all three chunks are held
    assert len(a) + len(b) + len(c) == 10
    # worker A dies: once its lease expires the chunk is leasable again, and only that chunk
    JobChunk.objects.filter(lease_token="token-a").update(lease_expires_at=timezone.now() - timedelta(seconds=1))
    again = ChunkSource(runs.RUN_JOB, job, "token-c", lambda: False).take()
    assert {u.payload for u in again} == {u.payload for u in a}
    # A's late completion does not mark the chunk it no longer holds
    for unit in a:
        first.finished(unit)
    assert JobChunk.objects.filter(lease_token="token-c", status="pending").count() == 1


def test_cancel_of_a_job_nobody_runs_stops_it_at_once_and_releases_its_chunks(run):
    runs.start(run)
    ChunkSource(runs.RUN_JOB, runs.RUN_JOB.get(run.pk), "t", lambda: False).take()
    runs.cancel(GenerationRun.objects.get(pk=run.pk))
    run.refresh_from_db()
    assert run.status == "cancelled" and run.cancel_requested
    assert not JobChunk.objects.filter(job_id=run.pk, kind="generation.run").exclude(lease_token="").exists()
    with pytest.raises(runs.RunError, match="already cancelled"):
        runs.cancel(run)


def test_sweep_queues_a_job_whose_workers_died_once_on_the_sweepers_queue(run, monkeypatch):
    from stereoscope.celery import app

    sent = []
    monkeypatch.setattr(app, "send_task", lambda name, args, **kw: sent.append((name, args, kw.get("queue"))))
    runs.start(run)
    assert jobs.sweep("q1") == []  # freshly queued: the broker has one lease period to deliver
    expired = timezone.now() - timedelta(seconds=1)
    GenerationRun.objects.filter(pk=run.pk).update(status="running", lease_expires_at=expired)
    ChunkSource(runs.RUN_JOB, runs.RUN_JOB.get(run.pk), "dead", lambda: False).take()
    assert jobs.sweep("q1") == [("generation.run", run.pk)]
    assert sent == [("generation.execute_run", [run.pk], "q1")]
    assert jobs.sweep("q2") == []  # claimed: the other workers' sweeps leave it alone


def test_sweep_ignores_cancelled_and_finished_jobs(run, monkeypatch):
    from stereoscope.celery import app

    monkeypatch.setattr(app, "send_task", lambda *a, **kw: pytest.fail("nothing should be queued"))
    runs.start(run)
    GenerationRun.objects.filter(pk=run.pk).update(status="cancelled", lease_expires_at=None)
    assert jobs.sweep("q") == []


def test_stalled_jobs_lists_waiting_jobs_only_when_no_worker_is_live(run, settings):
    from stereoscope.health import waiting_jobs_without_worker
    from stereoscope.models import WorkerHeartbeat

    settings.CELERY_TASK_ALWAYS_EAGER = False
    runs.start(run)
    # the queue has one lease period to deliver; after it, with no worker, the job is stalled
    GenerationRun.objects.filter(pk=run.pk).update(lease_expires_at=timezone.now() - timezone.timedelta(seconds=1))
    stalled = waiting_jobs_without_worker()
    assert [(row["kind"], row["id"]) for row in stalled] == [("generation run", run.pk)]
    WorkerHeartbeat.objects.create(hostname="w@test", pid=1, last_seen=timezone.now())
    assert waiting_jobs_without_worker() == []


def test_execute_completes_the_job_and_a_second_execute_finds_nothing(run, fake_provider):
    fake_provider.default = {"text": "A story."}
    runs.start(run)
    runs.execute(run.pk)
    run.refresh_from_db()
    assert run.status == "completed" and not run.lease_token
    assert jobs.chunk_counts(runs.RUN_JOB, run.pk) == {"pending": 0, "done": 3, "leased": 0}
    assert runs.execute(run.pk) is None
    assert ProviderCall.objects.filter(output__run=run).count() == 10 == len(fake_provider.requests)
    # each request names its attempt row, so the provider's log and the product's rows can be matched one to one
    received = sorted(int(r["attempt"]) for r in fake_provider.requests)
    assert received == sorted(ProviderCall.objects.filter(output__run=run).values_list("pk", flat=True))


def test_attempt_row_is_written_before_the_request_with_estimated_tokens(run, fake_provider):
    """While a request is in flight its attempt row already exists, outcome unknown, with estimated tokens;
    it is completed with the real figures after the answer."""
    from generation.runs.runner import CallbackSink, CallUnit, execute_units

    endpoint = run.endpoints.get()
    fake_provider.script([{"text": "late answer", "delay": 2.5, "usage": {"input": 7, "output": 3}}])
    seen = []

    def progress(stats, in_flight):
        if in_flight and not seen:
            seen.extend(
                ProviderCall.objects.filter(unit_ref="probe:1").values("outcome", "input_tokens", "output_tokens")
            )

    unit = CallUnit(
        unit_ref="probe:1",
        endpoint=endpoint,
        messages=[{"role": "user", "content": "Tell a story."}],
        params={"max_tokens": 50},
        purpose="generation",
    )
    execute_units(run.study, [unit], CallbackSink(), progress=progress)
    assert seen and seen[0]["outcome"] == "unknown" and seen[0]["output_tokens"] == 50 and seen[0]["input_tokens"] > 0
    row = ProviderCall.objects.get(unit_ref="probe:1")
    assert (row.outcome, row.ok, row.input_tokens, row.output_tokens) == ("ok", True, 7, 3)
    assert row.completed_at is not None


def test_results_are_stored_in_one_statement_and_one_by_one_if_that_fails(run, fake_provider):
    """A run's successes are written with the sink's on_success_many (one UPDATE for a batch); if the batch write
    fails, each result is stored on its own, so nothing is lost and a bad result fails alone."""
    from generation.runs.runner import execute_units

    fake_provider.default = {"text": "A story."}
    runs.start(run)
    sink = runs.OutputSink()
    calls = {"many": 0, "one": 0}
    original_one = sink.on_success

    def broken_many(pairs):
        calls["many"] += 1
        raise RuntimeError("the batch write failed")

    def one(unit, result):
        calls["one"] += 1
        original_one(unit, result)

    sink.on_success_many, sink.on_success = broken_many, one
    keys = list(Output.objects.filter(run=run).values_list("pk", flat=True))
    stats = execute_units(run.study, runs.RUN_JOB.load_units(run, keys), sink)
    assert stats.succeeded == 10 and calls["many"] >= 1 and calls["one"] == 10
    assert Output.objects.filter(run=run, status="done", text="A story.").count() == 10

    Output.objects.filter(run=run).update(status="pending", text="")
    stats = execute_units(run.study, runs.RUN_JOB.load_units(run, keys), runs.OutputSink())
    assert stats.succeeded == 10
    done = Output.objects.filter(run=run, status="done")
    assert done.count() == 10 and {o.provenance["model"] for o in done} == {run.endpoints.get().model_id}
    assert all(o.completed_at and o.latency_ms is not None for o in done)


def test_a_worker_warms_the_provider_sdks_up_before_it_takes_work():
    """Importing an SDK takes 0.5-1.5 s; a worker does it as it starts (stereoscope.jobs.warm_up from its ready
    signal), not on the event loop of its first job while that job's requests wait."""
    import subprocess
    import sys

    from tests.conftest import REPO_ROOT as ROOT

    code = (
        "import django, sys; django.setup(); from stereoscope import jobs; "
        "assert 'openai' not in sys.modules; jobs.warm_up(); "
        "print(sorted(m for m in ('openai', 'anthropic') if m in sys.modules))"
    )
    env = {k: v for k, v in __import__("os").environ.items()}
    env["DJANGO_SETTINGS_MODULE"] = "stereoscope.settings"
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().splitlines()[-1] == "['anthropic', 'openai']"


def test_deleting_a_job_or_its_study_deletes_its_chunks(run):
    """Chunks name their job by kind and id (no foreign key): every job kind's delete takes them along."""
    runs.start(run)
    other = runs.create_run(run.study, name="r2", toolkit=run.toolkit, endpoints=list(run.endpoints.all()))
    runs.start(other)
    run_id = run.pk
    assert JobChunk.objects.filter(kind="generation.run", job_id=run_id).count() == 3
    run.delete()
    assert not JobChunk.objects.filter(kind="generation.run", job_id=run_id).exists()
    assert JobChunk.objects.filter(kind="generation.run", job_id=other.pk).count() == 3
    other.study.delete()
    assert not JobChunk.objects.exists()
