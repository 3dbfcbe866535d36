"""{% load measures_tags %}{% lexicon_layer text lexicon %} — the toggleable, category-coloured highlight layer.

`lexicon` may be a Lexicon, its id, or a list of either. Add {% lexicon_layer_assets %} once per page (in the head
block) for the toggles and styles. The text is always escaped; only the <mark> tags are markup.
"""

from django import template
from django.templatetags.static import static
from django.utils.html import format_html

from measures.highlight import render_layer

register = template.Library()


@register.simple_tag
def lexicon_layer(text, lexicon, language=None):
    return render_layer(text, lexicon, language)


@register.simple_tag
def lexicon_layer_assets():
    return format_html(
        '<link rel="stylesheet" href="{}"><script src="{}" defer></script>',
        static("measures/measures.css"),
        static("measures/measures.js"),
    )
