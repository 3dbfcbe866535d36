from celery import shared_task


@shared_task(name="stereoscope.record_probe")
def record_probe(study_id, token):
    """Writes one activity line; the integration test uses it to prove a worker wrote to the database."""
    from .models import ActivityEvent

    ActivityEvent.objects.get_or_create(study_id=study_id, verb="worker probe", target=token)
    return token
