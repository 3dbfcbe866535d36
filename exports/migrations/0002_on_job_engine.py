"""Export jobs move onto the one job engine (stereoscope.jobs): the engine's columns, its status enum, and chunks
for the jobs that were queued or running under the old single lease, so a live worker's sweep picks them up."""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


def plan_waiting_jobs(apps, schema_editor):
    """One chunk per unit, as exports.services.ExportJobKind plans them (its datasets, then the bundle)."""
    ExportJob = apps.get_model("exports", "ExportJob")
    JobChunk = apps.get_model("stereoscope", "JobChunk")
    for job in ExportJob.objects.filter(status__in=["queued", "running"], file_name=""):
        keys = list(job.datasets) if job.format in ("csv", "jsonl") and job.datasets else ["bundle"]
        JobChunk.objects.filter(kind="exports.job", job_id=job.pk).delete()
        JobChunk.objects.bulk_create(
            [JobChunk(kind="exports.job", job_id=job.pk, number=n, units=[key], size=1) for n, key in enumerate(keys, 1)]
        )
        ExportJob.objects.filter(pk=job.pk).update(lease_token="", lease_expires_at=None)


class Migration(migrations.Migration):

    dependencies = [
        ('exports', '0001_initial'),
        ('stereoscope', '0004_job_engine_chunks'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.AddField(
            model_name='exportjob',
            name='cancel_requested',
            field=models.BooleanField(default=False),
        ),
        migrations.AddField(
            model_name='exportjob',
            name='started_by',
            field=models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to=settings.AUTH_USER_MODEL),
        ),
        migrations.AlterField(
            model_name='exportjob',
            name='message',
            field=models.TextField(blank=True, help_text='The last status message (e.g. why a job stopped).'),
        ),
        migrations.AlterField(
            model_name='exportjob',
            name='status',
            field=models.CharField(choices=[('draft', 'Draft'), ('queued', 'Queued'), ('running', 'Running'), ('completed', 'Completed'), ('cancelled', 'Cancelled'), ('failed', 'Failed')], default='draft', max_length=20),
        ),
        migrations.RunPython(plan_waiting_jobs, migrations.RunPython.noop),
    ]
