"""`{% footnotes rows as noted %}`: say each note of a table once, with the rows it applies to.

Each row (a dict or object with `notes`, a list of strings, and a label) gets marks a, b, … ; `noted.rows` yields
(row, marks) pairs and `noted.notes` the notes in first-seen order with their mark and the labels of their rows.
"""
from string import ascii_lowercase

from django import template

register = template.Library()


def _get(row, key):
    return row.get(key) if isinstance(row, dict) else getattr(row, key, None)


def _mark(index):
    mark = ""
    index += 1
    while index:
        index, rest = divmod(index - 1, 26)
        mark = ascii_lowercase[rest] + mark
    return mark


def group_notes(rows, label_key="name", notes_key="notes"):
    by_text, pairs = {}, []
    for row in rows or []:
        marks = []
        for text in _get(row, notes_key) or []:
            note = by_text.setdefault(text, {"mark": _mark(len(by_text)), "text": text, "rows": []})
            note["rows"].append(str(_get(row, label_key)))
            marks.append(note["mark"])
        pairs.append((row, marks))
    notes = list(by_text.values())
    for note in notes:
        note["all_rows"] = len(note["rows"]) == len(pairs) and len(pairs) > 1
    return {"rows": pairs, "notes": notes}


@register.simple_tag
def footnotes(rows, label_key="name", notes_key="notes"):
    return group_notes(rows, label_key, notes_key)
