from celery import shared_task


@shared_task(name="generation.execute_run", acks_late=True)
def execute_run(run_id):
    """Execute a run's pending units. Safe to run twice: a lease keeps one executor per run, and only
    pending units are called."""
    from .runs.services import execute

    stats = execute(run_id)
    return None if stats is None else {"succeeded": stats.succeeded, "failed": stats.failed}


@shared_task(name="generation.poll_batches", acks_late=True)
def poll_batches():
    """Poll every open provider batch once (Celery beat runs it every BATCH_POLL_SECONDS); ended batches' results
    go to their jobs. Safe to run twice at once: collecting a batch locks its row."""
    from .runs.batches import poll_open_batches

    return poll_open_batches()
