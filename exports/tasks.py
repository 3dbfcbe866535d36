from celery import shared_task


# The task keeps its original name so jobs queued before the exports app existed still run.
@shared_task(name="stereoscope.run_export", acks_late=True)
def run_export(job_id):
    """Work on one export job (the engine's chunk leases keep one writer per unit; a finished job is left alone)."""
    from .services import execute_job  # cycle: services imports this module to queue the task

    return execute_job(job_id)
