"""Job tags of every job page: `{% job_is_stalled job as stalled %}` (whether a job waits with no live worker; used
by _job_progress.html) and `{% poll_while_unfinished url job_or_jobs... %}` (htmx attributes that reload a job's
progress while it is unfinished)."""

from django import template
from django.utils.html import format_html

from stereoscope import health
from stereoscope.jobs import JobStatus

register = template.Library()

# How often a progress fragment reloads, by the job's status: a waiting job (an outage, a spending cap, a connection
# awaiting approval) is queued again by the sweep, so its page keeps asking, less often.
POLL_SECONDS = {JobStatus.QUEUED: 2, JobStatus.RUNNING: 2, JobStatus.WAITING: 10}


@register.simple_tag
def job_is_stalled(job):
    return health.job_is_stalled(job)


@register.simple_tag
def poll_while_unfinished(url, *jobs):
    """` hx-get="url" hx-trigger="every Ns" hx-swap="outerHTML"` while any of the jobs (each argument a job or a
    list of jobs) is queued, running or waiting, at the shortest interval of their statuses; "" once all ended."""
    flat = [j for arg in jobs for j in (arg if isinstance(arg, list | tuple) or hasattr(arg, "model") else [arg])]
    seconds = [POLL_SECONDS[j.status] for j in flat if j.status in POLL_SECONDS]
    if not seconds:
        return ""
    return format_html(' hx-get="{}" hx-trigger="every {}s" hx-swap="outerHTML"', url, min(seconds))
