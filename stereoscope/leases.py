"""Kept only so that code not yet moved to the job engine keeps importing: use stereoscope.jobs instead."""
from .jobs.engine import acquire_job_lease as acquire_lease  # noqa: F401
