"""Health that tells the truth: jobs waiting with no live worker make /healthz and the API degraded (non-200), and
each job page says it is stalled instead of showing a progress bar."""

from datetime import timedelta

import pytest
from django.utils import timezone

from exports.models import ExportJob
from generation.models import GenerationRun
from stereoscope.health import job_kinds, waiting_jobs_without_worker
from stereoscope.models import Study, WorkerHeartbeat

pytestmark = pytest.mark.django_db
STALLED = "Stalled — no live worker"


@pytest.fixture
def study():
    return Study.objects.create(name="Health study")


def queued_run(study, status="queued", **fields):
    return GenerationRun.objects.create(study=study, name="waiting run", status=status, **fields)


def test_every_job_kind_is_registered_and_queryable():
    assert job_kinds() == [
        "code discovery",
        "export job",
        "generation run",
        "judge round",
        "measure run",
        "questionnaire run",
    ]
    assert waiting_jobs_without_worker() == []


def test_waiting_job_with_no_live_worker_is_degraded(client, study):
    run = queued_run(study)
    export = ExportJob.objects.create(study=study, format="csv", status="running")
    response = client.get("/healthz?format=json")
    assert response.status_code == 503
    data = response.json()
    assert data["ok"] is False and data["status"] == "degraded"
    assert data["database"]["ok"] and data["broker"]["ok"] and data["workers"]["live"] == 0
    assert data["jobs"]["stalled"] == 2
    assert data["jobs"]["stalled_by_kind"] == {"generation run": 1, "export job": 1}
    assert {(j["kind"], j["id"]) for j in waiting_jobs_without_worker()} == {
        ("generation run", run.pk),
        ("export job", export.pk),
    }
    assert set(data["jobs"]) == {"stalled", "stalled_by_kind", "message"}  # public: counts only, no study or job
    assert client.get("/api/health/").status_code == 503
    page = client.get("/healthz")
    assert page.status_code == 503 and "DEGRADED" in page.content.decode() and "2 job(s)" in page.content.decode()


def test_fresh_heartbeat_makes_it_ok_again(client, study):
    queued_run(study)
    WorkerHeartbeat.objects.create(hostname="celery@live", pid=1)
    response = client.get("/healthz?format=json")
    assert response.status_code == 200 and response.json()["status"] == "ok" and response.json()["jobs"]["stalled"] == 0
    WorkerHeartbeat.objects.update(last_seen=timezone.now() - timedelta(minutes=5))  # the worker went away
    assert client.get("/healthz?format=json").status_code == 503


def test_jobs_that_do_not_wait_keep_it_ok(client, study):
    for status in ("draft", "completed", "failed", "cancelled"):
        queued_run(study, status=status)
    # a run in the foreground (the CLI) holds a live lease: it is being executed, not waiting
    queued_run(study, status="running", lease_token="cli", lease_expires_at=timezone.now() + timedelta(seconds=60))
    assert client.get("/healthz?format=json").status_code == 200
    queued_run(study, status="running", lease_token="dead", lease_expires_at=timezone.now() - timedelta(seconds=1))
    assert client.get("/healthz?format=json").status_code == 503  # its executor died and nobody can take it over


def test_eager_mode_needs_no_worker(client, study, settings):
    settings.CELERY_TASK_ALWAYS_EAGER = True
    queued_run(study)
    assert client.get("/healthz?format=json").status_code == 200


def test_job_pages_show_the_stalled_notice(roles, client_for):
    study = roles["a"]
    run = queued_run(study)
    researcher = client_for(roles["users"]["researcher"])
    html = researcher.get(f"/studies/{study.pk}/runs/{run.pk}/").content.decode()
    assert STALLED in html and 'class="progress"' not in html
    WorkerHeartbeat.objects.create(hostname="celery@live", pid=1)
    html = researcher.get(f"/studies/{study.pk}/runs/{run.pk}/").content.decode()
    assert STALLED not in html and 'class="progress"' in html


JOB_PROGRESS_TEMPLATES = [
    "generation/_run_progress.html",
    "judging/_progress.html",
    "psychometrics/_progress.html",
    "measures/_run_progress.html",
    "exports/_jobs.html",
    "annotation/_discovery.html",
]


@pytest.mark.parametrize("name", JOB_PROGRESS_TEMPLATES)
def test_every_job_page_uses_the_one_progress_include(name):
    from tests.conftest import REPO_ROOT

    source = (REPO_ROOT / "templates" / name).read_text(encoding="utf-8")
    assert '{% include "stereoscope/_job_progress.html" with job=' in source
    assert 'class="progress"' not in source and "<progress" not in source  # no bar of its own


@pytest.mark.parametrize("status,stalled", [("queued", True), ("running", True), ("completed", False)])
def test_the_include_renders_the_notice_or_the_bar(status, stalled):
    from django.template.loader import render_to_string

    job = ExportJob(status=status)
    html = render_to_string("stereoscope/_job_progress.html", {"job": job, "percent": 40})
    assert (STALLED in html) is stalled
    assert ('style="width: 40%"' in html) is not stalled


def test_a_lease_whose_worker_stopped_beating_does_not_hold_the_job(client, study):
    """A worker's lease token names its instance: once its heartbeat is older than WORKER_LIVE_SECONDS (and the
    lease was not renewed since), the job waits at once, though the lease itself runs for most of a minute more."""
    now = timezone.now()
    beat = WorkerHeartbeat.objects.create(hostname="celery@w1", pid=1, instance="w1", last_seen=now)
    run = queued_run(
        study, status="running", lease_token="abc@w1", lease_expires_at=now + timedelta(seconds=45)
    )  # renewed 15 s ago
    assert client.get("/healthz?format=json").status_code == 200  # its worker beats: it is being run
    WorkerHeartbeat.objects.filter(pk=beat.pk).update(last_seen=now - timedelta(seconds=15))
    response = client.get("/healthz?format=json")
    assert response.status_code == 503 and response.json()["jobs"]["stalled_by_kind"] == {"generation run": 1}
    assert waiting_jobs_without_worker() == [
        {"kind": "generation run", "id": run.pk, "study_id": study.pk, "status": "running"}
    ]
    # a lease renewed just now is its worker's, even before that worker's first beat
    GenerationRun.objects.filter(pk=run.pk).update(lease_expires_at=timezone.now() + timedelta(seconds=59))
    assert client.get("/healthz?format=json").status_code == 200
