"""A report as plain data: sections of blocks (paragraphs, lists, tables, figures, code). Renderers (render.py)
write it as HTML, Markdown or PDF; nothing here formats for one of them. Table cells are text (numbers already
printed by numbers.py); `values` keeps each cell's number (or None) for checks against the API."""

import math
from dataclasses import dataclass, field

# (key, title): the sections a report can show, in the order of a paper.
SECTIONS = (
    ("methods", "Methods"),
    ("detection", "Results: detection rates and weights"),
    ("agreement", "Results: agreement"),
    ("questionnaires", "Results: questionnaire statistics"),
    ("contrasts", "Results: contrasts"),
    ("gold", "Results: gold labels"),
    ("classifiers", "Results: trained classifiers"),
    ("seed", "The seed study's tables"),
    ("reproducibility", "Reproducibility"),
)
SECTION_KEYS = tuple(key for key, _title in SECTIONS)
TITLES = dict(SECTIONS)


@dataclass
class Section:
    key: str
    title: str
    blocks: list = field(default_factory=list)

    def add(self, *blocks):
        self.blocks.extend(b for b in blocks if b)
        return self


@dataclass
class Document:
    title: str
    subtitle: str
    sections: list = field(default_factory=list)

    def tables(self):
        return [b for s in self.sections for b in s.blocks if b["type"] == "table"]

    def figures(self):
        return [b for s in self.sections for b in s.blocks if b["type"] == "figure"]

    def number(self):
        """Tables and figures numbered in order of appearance (Table 1, Figure 1, ...)."""
        for kind, label in (("table", "Table"), ("figure", "Figure")):
            n = 0
            for section in self.sections:
                for block in section.blocks:
                    if block["type"] == kind:
                        n += 1
                        block["label"] = f"{label} {n}"
        return self


def heading(text):
    return {"type": "heading", "text": text}


def para(text):
    return {"type": "paragraph", "text": text}


def bullets(items):
    items = [i for i in items if i]
    return {"type": "list", "items": items} if items else None


def code(text, language=""):
    return {"type": "code", "text": text, "language": language}


def table(title, columns, rows, *, note="", values=None, key=""):
    """rows: lists of cell text; values: the same shape with each cell's number (None when text or undefined)."""
    if values is not None:
        values = [[None if isinstance(v, float) and not math.isfinite(v) else v for v in row] for row in values]
    return {
        "type": "table",
        "key": key,
        "title": title,
        "columns": list(columns),
        "rows": [[str(c) for c in row] for row in rows],
        "values": values if values is not None else [[None] * len(row) for row in rows],
        "note": note,
    }


def figure(title, desc, svg, key=""):
    return {"type": "figure", "key": key, "title": title, "desc": desc, "svg": svg}
