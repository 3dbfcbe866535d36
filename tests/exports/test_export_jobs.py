"""Export jobs on the one job engine: a unit per dataset (staged) plus the bundle; a worker that died is replaced by
the sweep with nobody pressing anything, finished datasets are not written again, cancel/resume/retry, and the
final path never holds a half-written file."""

import csv
import io
import time
import zipfile
from datetime import timedelta

import pytest
from django.utils import timezone

from exports import services
from exports.models import ExportJob
from stereoscope import jobs
from stereoscope.jobs import ChunkSource, JobChunk

pytestmark = pytest.mark.django_db


@pytest.fixture
def counted(monkeypatch):
    """Two datasets ("outputs" and a copy, "outputs_b") whose row queries are counted; `slow` delays rows."""
    from stereoscope import datasets as registry

    calls = {"outputs": 0, "outputs_b": 0, "slow": 0.0, "on_row": None, "broken": set()}
    original = registry.get_dataset("outputs")

    def counting(key):
        def rows(study, options):
            calls[key] += 1
            for n, row in enumerate(original.rows(study, options), 1):
                if key in calls["broken"]:
                    raise RuntimeError(f"{key}: database went away")
                if calls["on_row"]:
                    calls["on_row"](key, n)
                time.sleep(calls["slow"])
                yield row

        return rows

    for key in ("outputs", "outputs_b"):
        monkeypatch.setitem(
            registry._registry, key, original.__class__(**{**original.__dict__, "key": key, "rows": counting(key)})
        )
    return calls


def _files(job):
    job.refresh_from_db()
    with zipfile.ZipFile(services.job_path(job)) as zf:
        return {name: zf.read(name) for name in zf.namelist()}


def _leftovers(export_root):
    return sorted(p.name for p in export_root.rglob("*") if p.name.endswith((".part", ".tmp")))


def test_units_are_the_datasets_then_the_bundle(gen_study, export_root, counted):
    job = services.create_job(gen_study["study"], fmt="csv", dataset_keys=["outputs", "outputs_b"], enqueue=False)
    chunks = JobChunk.objects.filter(kind="exports.job", job_id=job.pk).order_by("number")
    assert [c.units for c in chunks] == [["outputs"], ["outputs_b"]]
    assert services.execute_job(job.pk) == services.job_file_name(job)
    job.refresh_from_db()
    assert job.status == "completed" and job.progress["percent"] == 100 and job.progress["rows"] == 12
    assert job.manifest["row_counts"] == {"outputs": 6, "outputs_b": 6}
    files = _files(job)
    assert files["outputs.csv"] == files["outputs_b.csv"].replace(b"outputs_b", b"outputs")
    by_path = {f["path"]: f for f in job.manifest["files"]}
    assert by_path["outputs.csv"]["rows"] == 6 and by_path["outputs.csv"]["bytes"] == len(files["outputs.csv"])
    assert counted["outputs"] == 1 and counted["outputs_b"] == 1
    assert not services.staging_dir(job).exists() and _leftovers(export_root) == []
    services.delete_job(job)
    assert not JobChunk.objects.filter(kind="exports.job", job_id=job.pk).exists()
    assert not any(p.is_file() for p in export_root.rglob("*"))


def test_an_export_whose_worker_died_is_picked_up_by_the_sweep_without_anyone(
    gen_study, export_root, counted, monkeypatch
):
    """A worker wrote "outputs", was half-way through "outputs_b" and was killed. Nobody presses Resume: a live
    worker's sweep (run with its heartbeat, stereoscope.worker_heartbeat) queues the job once the lease expired,
    and that worker finishes only what is missing. Until then the final path holds nothing."""
    from exports.tasks import run_export
    from stereoscope.celery import app

    sent = []
    monkeypatch.setattr(app, "send_task", lambda name, args, **kw: sent.append((name, args, kw.get("queue"))))
    job = services.create_job(gen_study["study"], fmt="csv", dataset_keys=["outputs", "outputs_b"], enqueue=False)
    ExportJob.objects.filter(pk=job.pk).update(status="running", lease_token="dead", started_at=timezone.now())
    dead = ChunkSource(services.EXPORT_JOB, services.EXPORT_JOB.get(job.pk), "dead", lambda: False)
    [first] = dead.take()
    services.stage_dataset(job, first.key)
    dead.finished(first)
    [second] = dead.take()
    assert second.key == "outputs_b"
    partial = services.staging_dir(job) / "outputs_b.csv.tmp"
    partial.write_bytes(b"output_id,run\n1,")  # killed mid-write
    assert jobs.sweep("q-live") == [] and sent == []  # its leases are still running: it may be alive

    expired = timezone.now() - timedelta(seconds=1)
    ExportJob.objects.filter(pk=job.pk).update(lease_expires_at=expired)
    JobChunk.objects.filter(lease_token="dead").update(lease_expires_at=expired)
    assert jobs.sweep("q-live") == [("exports.job", job.pk)]
    assert sent == [("stereoscope.run_export", [job.pk], "q-live")]
    assert jobs.sweep("q-other") == []  # claimed once
    assert not services.job_path(ExportJob.objects.get(pk=job.pk)).is_file()

    assert run_export(job.pk)  # what the live worker does with the task it queued for itself
    job.refresh_from_db()
    assert job.status == "completed", job.message
    assert (counted["outputs"], counted["outputs_b"]) == (1, 1)  # "outputs" was not queried again
    files = _files(job)
    assert job.manifest["row_counts"] == {"outputs": 6, "outputs_b": 6}
    assert len(list(csv.reader(io.StringIO(files["outputs_b.csv"].decode())))) == 7  # header and 6 rows, whole
    assert not services.staging_dir(job).exists() and _leftovers(export_root) == []
    assert list(services.job_path(job).parent.iterdir()) == [services.job_path(job)]


def test_cancel_stops_the_export_mid_dataset_and_resume_does_the_rest(gen_study, export_root, counted, monkeypatch):
    monkeypatch.setattr(services, "PROGRESS_EVERY", 1)
    job = services.create_job(gen_study["study"], fmt="jsonl", dataset_keys=["outputs", "outputs_b"], enqueue=False)

    def cancel_on_b(key, n):
        if key == "outputs_b" and n == 2:
            services.cancel_job(ExportJob.objects.get(pk=job.pk))
            counted["slow"] = 0.2  # the workers see the flag within half a second

    counted["on_row"] = cancel_on_b
    assert services.execute_job(job.pk) is None
    job.refresh_from_db()
    assert job.status == "cancelled" and job.cancel_requested and not job.file_name
    assert sorted(services.staged_parts(job)) == ["outputs"]
    assert _leftovers(export_root) == [] and not any(p.is_file() for p in services.staging_dir(job).parent.glob("*"))

    counted.update(on_row=None, slow=0.0)
    with pytest.raises(services.ExportError, match="already running"):
        ExportJob.objects.filter(pk=job.pk).update(
            status="running", lease_token="x", lease_expires_at=timezone.now() + timedelta(minutes=1)
        )
        services.resume_job(ExportJob.objects.get(pk=job.pk))
    ExportJob.objects.filter(pk=job.pk).update(status="cancelled", lease_token="", lease_expires_at=None)
    services.resume_job(ExportJob.objects.get(pk=job.pk))  # tasks run eagerly in tests
    job.refresh_from_db()
    assert job.status == "completed", job.message
    assert counted["outputs"] == 1 and counted["outputs_b"] == 2
    assert _files(job)["outputs_b.jsonl"].count(b"\n") == 6
    with pytest.raises(services.ExportError, match="already completed"):
        services.resume_job(job)


def test_a_failed_dataset_fails_the_job_and_retry_redoes_only_what_is_missing(gen_study, export_root, counted):
    counted["broken"].add("outputs_b")
    job = services.create_job(gen_study["study"], fmt="csv", dataset_keys=["outputs", "outputs_b"])
    assert job.status == "failed" and "outputs_b: database went away" in job.message
    assert not job.file_name and _leftovers(export_root) == []
    assert sorted(services.staged_parts(job)) == ["outputs"]
    assert jobs.chunk_counts(services.EXPORT_JOB, job.pk)["leased"] == 0

    counted["broken"].clear()
    job = services.retry_job(job)
    assert job.status == "completed", job.message
    assert counted["outputs"] == 1 and counted["outputs_b"] == 2
    assert job.manifest["row_counts"] == {"outputs": 6, "outputs_b": 6}
    with pytest.raises(services.ExportError, match="No failed parts"):
        services.retry_job(job)


def test_an_xlsx_export_is_one_unit(gen_study, export_root, counted):
    job = services.create_job(gen_study["study"], fmt="xlsx", dataset_keys=["outputs", "outputs_b"])
    assert job.status == "completed", job.message
    assert list(JobChunk.objects.filter(kind="exports.job", job_id=job.pk).values_list("units", flat=True)) == [
        ["bundle"]
    ]
    assert counted["outputs"] == 1 and job.manifest["row_counts"] == {"outputs": 6, "outputs_b": 6}


def test_waiting_export_without_a_worker_is_stalled(gen_study, export_root, settings):
    from stereoscope.health import waiting_jobs_without_worker

    settings.CELERY_TASK_ALWAYS_EAGER = False
    job = services.create_job(gen_study["study"], fmt="csv", dataset_keys=["outputs"], enqueue=False)
    from stereoscope.models import WorkerHeartbeat

    assert waiting_jobs_without_worker() == [
        {"kind": "export job", "id": job.pk, "study_id": job.study_id, "status": "queued"}
    ]
    WorkerHeartbeat.objects.create(hostname="w@test", pid=1, last_seen=timezone.now())
    assert waiting_jobs_without_worker() == []
