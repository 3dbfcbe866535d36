"""The lexicon highlight layer: text → escaped HTML with <mark> spans coloured by category (overlaps allowed)."""

from collections import Counter
from itertools import pairwise

from django.utils.html import escape, format_html
from django.utils.safestring import mark_safe

from .lexical import LexiconError
from .models import Lexicon
from .services import matcher_for


def _lexicons(value):
    if value is None or value == "":
        return []
    if isinstance(value, Lexicon):
        return [value]
    if isinstance(value, (int, str)):
        return list(Lexicon.objects.filter(pk=value))
    return [lx if isinstance(lx, Lexicon) else Lexicon.objects.get(pk=lx) for lx in value]


def layer_matches(text, lexicons, language=None, skipped=None):
    """(matches, {category id: category}) over all lexicons; match.category is the category id as a string. A
    lexicon whose matching fails on this text (a regular expression that runs too long: LexiconError) adds no
    matches; when `skipped` is a list, (lexicon, why) is appended to it, else the error is raised."""
    matches, categories = [], {}
    for lexicon in lexicons:
        cats = list(lexicon.categories.all())
        try:
            found = matcher_for(lexicon, language, cats).find(text)
        except LexiconError as exc:
            if skipped is None:
                raise
            skipped.append((lexicon, str(exc)))
            continue
        categories.update({str(c.pk): c for c in cats})
        matches.extend(found)
    return matches, categories


def render_layer(text, lexicons, language=None):
    """Safe HTML: the text escaped, matches wrapped in <mark>, plus a legend with one toggle per category."""
    text = text or ""
    lexicons = _lexicons(lexicons)
    skipped = []
    matches, categories = layer_matches(text, lexicons, language, skipped)
    bounds = sorted({0, len(text)} | {m.start for m in matches} | {m.end for m in matches})
    parts = []
    for a, b in pairwise(bounds):
        covering = [m for m in matches if m.start <= a and m.end >= b]
        segment = text[a:b]
        if not covering:
            parts.append(escape(segment))
            continue
        cat_ids = list(dict.fromkeys(m.category for m in covering))
        title = "; ".join(
            f"{categories[c].name} ({', '.join(sorted({m.entry for m in covering if m.category == c}))})"
            for c in cat_ids
        )
        parts.append(
            format_html(
                '<mark class="lx" data-cats="{}" style="background-color:{}33;border-bottom:2px solid {}" '
                'title="{}">{}</mark>',
                " ".join(cat_ids),
                categories[cat_ids[0]].color,
                categories[cat_ids[0]].color,
                title,
                segment,
            )
        )
    counts = Counter(m.category for m in matches)
    legend = [
        format_html(
            '<label class="lx-toggle"><input type="checkbox" checked data-lx-toggle="{}"> '
            '<span class="lx-swatch" style="background:{}"></span>{} <span class="muted">({})</span></label>',
            cid,
            cat.color,
            cat.name,
            counts.get(cid, 0),
        )
        for cid, cat in categories.items()
    ]
    legend += [
        format_html('<span class="lx-skipped" role="status">Not highlighted: {}. {}</span>', lexicon.name, why)
        for lexicon, why in skipped
    ]
    colors = " ".join(f"{cid}:{cat.color}" for cid, cat in categories.items())
    return format_html(
        '<div class="lexicon-layer" data-lx-colors="{}"><div class="lx-legend">'
        '<label class="lx-toggle"><input type="checkbox" '
        'checked data-lx-all> <strong>Lexicon layer</strong></label> {}</div><div class="story lx-text">{}</div></div>',
        colors,
        mark_safe(" ".join(legend)),
        mark_safe("".join(str(p) for p in parts)),
    )
