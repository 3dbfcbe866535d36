from celery import shared_task


@shared_task(name="stereoscope.record_probe")
def record_probe(study_id, token):
    """Writes one activity line; the integration test uses it to prove a worker wrote to the database."""
    from .models import ActivityEvent

    ActivityEvent.objects.get_or_create(study_id=study_id, verb="worker probe", target=token)
    return token


@shared_task(name="stereoscope.run_export", acks_late=True)
def run_export(job_id):
    """Write one export job's file. Safe to run twice: a lease keeps one writer, a finished job is left alone."""
    from .exporting.services import execute_job

    return execute_job(job_id)
