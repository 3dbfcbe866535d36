from celery import shared_task


@shared_task(name="judging.execute_round", acks_late=True)
def execute_round(round_id):
    """Ask a round's pending verdicts. Safe to run twice: a lease keeps one executor per round, and only pending
    verdicts are asked."""
    from .rounds import execute  # cycle: rounds imports this module to queue the task

    stats = execute(round_id)
    return None if stats is None else {"succeeded": stats.succeeded, "failed": stats.failed}
