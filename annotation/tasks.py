from celery import shared_task


@shared_task(name="annotation.run_code_discovery", acks_late=True)
def run_code_discovery(discovery_id):
    """Ask the model for codes. Safe to run twice: only a pending discovery is claimed and called."""
    from .services import run_discovery

    discovery = run_discovery(discovery_id)
    return None if discovery is None else discovery.status
