"""`{{ start|duration:end }}`: the time between two datetimes as "1 h 02 min 05 s"; "" when either is missing."""
from django import template

register = template.Library()


@register.filter
def duration(start, end):
    if not start or not end:
        return ""
    seconds = max(0, round((end - start).total_seconds()))
    hours, rest = divmod(seconds, 3600)
    minutes, seconds = divmod(rest, 60)
    if hours:
        return f"{hours} h {minutes:02d} min {seconds:02d} s"
    if minutes:
        return f"{minutes} min {seconds:02d} s"
    return f"{seconds} s"
