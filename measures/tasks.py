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
    from .contrasts import FairnessError, fairness_check, store_fairness
    from .models import MeasureRun

    run = MeasureRun.objects.get(pk=run_id)
    try:
        result = fairness_check(run, limit=limit)
    except FairnessError as exc:  # shown in the report instead of failing silently in a worker
        store_fairness(run, {"error": str(exc)})
        return {"error": str(exc)}
    return {"n": result["n"], "flipped": result["flipped"]}
