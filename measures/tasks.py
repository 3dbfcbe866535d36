from celery import shared_task


@shared_task(name="measures.execute_run", acks_late=True)
def execute_measure_run(run_id):
    """Score a measure run's outputs that have no measure yet. Safe to run twice: a lease keeps one executor per
    run and scored outputs are skipped."""
    from .scoring import execute

    scored = execute(run_id)
    return None if scored is None else {"scored": scored}


@shared_task(name="measures.fairness_check", acks_late=True)
def fairness_check_task(run_id, limit=2000):
    """Score gender-swapped copies with the run's classifier and store the comparison (replaces an earlier one)."""
    from .contrasts import fairness_check
    from .models import MeasureRun

    result = fairness_check(MeasureRun.objects.get(pk=run_id), limit=limit)
    return {"n": result["n"], "flipped": result["flipped"]}
