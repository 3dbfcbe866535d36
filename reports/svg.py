"""Figures of a report as accessible inline SVG: role="img", a <title> and a <desc> that says what the figure shows
(its numbers are in the table next to it). Text is escaped; no scripts, no external references."""

import math

from django.utils.html import escape

from .numbers import defined, num

FONT = 'font-family="sans-serif" font-size="11"'


def _open(uid, width, height, title, desc):
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" role="img" aria-labelledby="{uid}-t {uid}-d" '
        f'viewBox="0 0 {width} {height}" width="{width}" height="{height}">'
        f'<title id="{uid}-t">{escape(title)}</title><desc id="{uid}-d">{escape(desc)}</desc>'
    )


def bars(uid, title, desc, rows, *, maximum=1.0, width=520, digits=2):
    """Horizontal bars: rows = [(label, value)], value in [0, maximum] (undefined: no bar, "—")."""
    row_h, left, right = 18, 170, 60
    height = row_h * len(rows) + 24
    plot = width - left - right
    parts = [_open(uid, width, height, title, desc)]
    for i, (label, value) in enumerate(rows):
        y = 8 + i * row_h
        parts.append(f'<text x="{left - 6}" y="{y + 12}" text-anchor="end" {FONT}>{escape(str(label)[:28])}</text>')
        if defined(value) and maximum:
            w = max(0.0, min(1.0, value / maximum)) * plot
            parts.append(f'<rect x="{left}" y="{y + 2}" width="{w:.1f}" height="{row_h - 5}" fill="#3b6ea5"/>')
        parts.append(f'<text x="{left + plot + 4}" y="{y + 12}" {FONT}>{escape(num(value, digits))}</text>')
    parts.append(f'<line x1="{left}" y1="4" x2="{left}" y2="{height - 14}" stroke="#333"/>')
    parts.append("</svg>")
    return "".join(parts)


def forest(uid, title, desc, rows, *, width=560):
    """A forest plot of odds ratios on a log axis: rows = [(label, or, low, high)]; OR = 1 marked."""
    row_h, left, right = 20, 190, 70
    height = row_h * len(rows) + 40
    plot = width - left - right
    values = [v for _label, o, lo, hi in rows for v in (o, lo, hi) if defined(v) and v > 0]
    span = max([abs(math.log(v)) for v in values] + [math.log(2)])

    def x(v):
        return left + (math.log(v) / span + 1) / 2 * plot

    parts = [_open(uid, width, height, title, desc)]
    parts.append(
        f'<line x1="{x(1):.1f}" y1="4" x2="{x(1):.1f}" y2="{height - 24}" stroke="#888" stroke-dasharray="3,3"/>'
    )
    parts.append(f'<text x="{x(1):.1f}" y="{height - 8}" text-anchor="middle" {FONT}>OR = 1</text>')
    for i, (label, o, lo, hi) in enumerate(rows):
        y = 10 + i * row_h
        parts.append(f'<text x="{left - 6}" y="{y + 4}" text-anchor="end" {FONT}>{escape(str(label)[:30])}</text>')
        if defined(lo) and defined(hi) and lo > 0 and hi > 0:
            parts.append(f'<line x1="{x(lo):.1f}" y1="{y}" x2="{x(hi):.1f}" y2="{y}" stroke="#333"/>')
        if defined(o) and o > 0:
            parts.append(f'<rect x="{x(o) - 4:.1f}" y="{y - 4}" width="8" height="8" fill="#a5483b"/>')
        parts.append(f'<text x="{left + plot + 6}" y="{y + 4}" {FONT}>{escape(num(o))}</text>')
    parts.append("</svg>")
    return "".join(parts)


def heatmap(uid, title, desc, row_labels, col_labels, values, *, width=560):
    """A shaded grid of shares in [0, 1]: values[r][c] (undefined: white with "—")."""
    cell_w = max(50, (width - 170) // max(1, len(col_labels)))
    cell_h, left, top = 22, 170, 40
    width = left + cell_w * len(col_labels) + 10
    height = top + cell_h * len(row_labels) + 10
    parts = [_open(uid, width, height, title, desc)]
    for c, label in enumerate(col_labels):
        parts.append(
            f'<text x="{left + c * cell_w + cell_w / 2}" y="{top - 8}" text-anchor="middle" {FONT}>'
            f"{escape(str(label)[:14])}</text>"
        )
    for r, label in enumerate(row_labels):
        y = top + r * cell_h
        parts.append(f'<text x="{left - 6}" y="{y + 15}" text-anchor="end" {FONT}>{escape(str(label)[:28])}</text>')
        for c in range(len(col_labels)):
            v = values[r][c]
            shade = int(255 - 135 * max(0.0, min(1.0, v))) if defined(v) else 255
            ink = "#000"
            parts.append(
                f'<rect x="{left + c * cell_w}" y="{y}" width="{cell_w - 2}" height="{cell_h - 2}" '
                f'fill="rgb({shade},{shade},255)" stroke="#ccc"/>'
                f'<text x="{left + c * cell_w + cell_w / 2}" y="{y + 15}" text-anchor="middle" fill="{ink}" {FONT}>'
                f"{escape(num(v))}</text>"
            )
    parts.append("</svg>")
    return "".join(parts)
