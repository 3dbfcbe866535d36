from celery import shared_task


@shared_task(name="generation.execute_run", acks_late=True)
def execute_run(run_id):
    """Execute a run's pending units. Safe to run twice: a lease keeps one executor per run, and only
    pending units are called."""
    from .runs import execute

    stats = execute(run_id)
    return None if stats is None else {"succeeded": stats.succeeded, "failed": stats.failed}
