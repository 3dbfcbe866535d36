from django import template
from django.utils.html import conditional_escape, format_html
from django.utils.safestring import mark_safe

from generation.toolkits.slots import SlotError, _tokens

register = template.Library()


@register.filter
def highlight_slots(text):
    """Item text with each {slot} in a <mark>; every piece is escaped. Invalid braces show the raw text, escaped."""
    try:
        tokens = list(_tokens(text or ""))
    except SlotError:
        return conditional_escape(text)
    parts = []
    for kind, value in tokens:
        if kind == "text":
            parts.append(conditional_escape(value))
        else:
            parts.append(format_html('<mark class="slot" title="slot">{{{}}}</mark>', value))
    return mark_safe("".join(parts))


@register.filter
def slot_values_text(values):
    return ", ".join(f"{k} = {v}" for k, v in (values or {}).items())
