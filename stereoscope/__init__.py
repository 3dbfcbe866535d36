"""Stereoscope: auditing LLMs for gender stereotypes (the design card's `platform` package)."""

from .celery import app as celery_app

__all__ = ["celery_app"]
__version__ = "0.1.0"
