"""`{% job_is_stalled job as stalled %}`: whether a job waits with no live worker (used by _job_progress.html)."""
from django import template

from stereoscope import health

register = template.Library()


@register.simple_tag
def job_is_stalled(job):
    return health.job_is_stalled(job)
