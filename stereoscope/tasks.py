from celery import shared_task


@shared_task(name="stereoscope.record_probe")
def record_probe(study_id, token):
    """Writes one activity line; the integration test uses it to prove a worker wrote to the database."""
    from .services import record_probe as write_probe

    write_probe(study_id, token)
    return token
