from celery import shared_task


@shared_task(name="annotation.run_code_discovery", acks_late=True)
def run_code_discovery(discovery_id):
    """Ask a discovery's pending requests (live) or submit them as batches. Safe to run twice: the job engine's
    chunk leases keep each request with one worker, and only pending requests are asked."""
    from .services import run_discovery

    stats = run_discovery(discovery_id)
    return None if stats is None else {"succeeded": stats.succeeded, "failed": stats.failed}
