"""Stereoscope: auditing LLMs for gender stereotypes (the design card's `platform` package).

The Celery app (stereoscope/celery.py) is imported when Django's apps are ready (StereoscopeConfig.ready), so every
Django process has it before a task is sent, and by `celery -A stereoscope`; importing this package alone does not
import Celery (~0.2 s), so Django-free code under it (stereoscope/stats, a file's `manage.py agreement`) starts fast.
"""

__all__ = ["celery_app"]
__version__ = "0.1.0"


def __getattr__(name):
    if name == "celery_app":
        from .celery import app  # lazy: Celery costs ~0.2 s of start-up, which Django-free code here does not need

        return app
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
