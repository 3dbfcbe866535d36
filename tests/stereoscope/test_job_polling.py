"""A job's progress keeps reloading while the job waits (an outage, a spending cap, a connection awaiting approval:
the sweep queues it again), not only while it is queued or running: before, a page showing "Waiting" stopped
polling, and the researcher saw the job resume only after reloading the page."""

import pytest

from tests.exports.conftest import export_root, gen_study  # noqa: F401

pytestmark = pytest.mark.django_db


def test_the_tag_polls_while_a_job_is_unfinished(roles):
    from django.template import Context, Template

    from exports.models import ExportJob

    study = roles["a"]
    template = Template("{% load job_health %}<div{% poll_while_unfinished url jobs %}>")

    def attrs(*statuses):
        jobs = [ExportJob(study=study, format="csv", status=s) for s in statuses]
        return template.render(Context({"url": "/p/?a=1&b=2", "jobs": jobs}))

    assert attrs("running") == '<div hx-get="/p/?a=1&amp;b=2" hx-trigger="every 2s" hx-swap="outerHTML">'
    assert attrs("waiting", "completed") == '<div hx-get="/p/?a=1&amp;b=2" hx-trigger="every 10s" hx-swap="outerHTML">'
    assert 'every 2s"' in attrs("waiting", "queued")
    assert attrs("completed", "failed", "cancelled", "draft") == "<div>"


def test_pages_of_a_waiting_job_keep_polling(gen_study, roles, client_for, export_root):  # noqa: F811
    from exports.models import ExportJob
    from generation.models import GenerationRun

    study, web = roles["a"], client_for(roles["users"]["researcher"])
    job = ExportJob.objects.create(study=study, format="csv", status="waiting", message="The database is away.")
    jobs = web.get(f"/studies/{study.pk}/exports/jobs/").content.decode()
    assert 'hx-trigger="every 10s"' in jobs and "The database is away." in jobs
    job.status = "completed"
    job.save()
    assert "hx-trigger" not in web.get(f"/studies/{study.pk}/exports/jobs/").content.decode()

    run = GenerationRun.objects.filter(study=study).first()
    run.status = "waiting"
    run.save()
    progress = web.get(f"/studies/{study.pk}/runs/{run.pk}/progress/").content.decode()
    assert 'hx-trigger="every 10s"' in progress
