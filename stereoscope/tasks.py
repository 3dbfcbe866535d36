from celery import shared_task


@shared_task(name="stereoscope.record_probe")
def record_probe(study_id, token):
    """Writes one activity line; the integration test uses it to prove a worker wrote to the database."""
    from .services import record_probe as write_probe

    write_probe(study_id, token)
    return token


@shared_task(name="stereoscope.purge_trash")
def purge_trash():
    """Beat runs it every six hours: purge the studies in the trash past TRASH_RETENTION_DAYS."""
    from .trash import purge_expired

    purged, kept = purge_expired()
    return {"purged": purged, "kept": kept}
