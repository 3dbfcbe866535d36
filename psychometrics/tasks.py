from celery import shared_task


@shared_task(name="psychometrics.execute_questionnaire_run", acks_late=True)
def execute_questionnaire_run(run_id):
    """Execute a questionnaire run's pending units. Safe to run twice: a lease keeps one executor per run, and
    only pending responses are asked."""
    from .runs import execute  # cycle: runs imports this module to queue the task

    stats = execute(run_id)
    return None if stats is None else {"succeeded": stats.succeeded, "failed": stats.failed}
