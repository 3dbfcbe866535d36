"""Renderers of a report Document: one self-contained HTML file (inline CSS with print rules, figures as inline SVG,
no network), Markdown with pipe tables, and PDF (WeasyPrint, the `report` extra) from the HTML."""

from django.utils.html import escape

CSS = """
body{font-family:Georgia,'Times New Roman',serif;max-width:52rem;margin:2rem auto;padding:0 1rem;color:#111;
line-height:1.45;background:#fff}
h1{font-size:1.7rem;margin-bottom:.2rem}h2{font-size:1.3rem;margin-top:2rem;border-bottom:1px solid #999}
h3{font-size:1.05rem;margin-top:1.2rem}.subtitle{color:#444}
table{border-collapse:collapse;margin:1rem 0;font-size:.9rem;width:100%}
caption{text-align:left;font-style:italic;margin-bottom:.3rem}caption b{font-style:normal;display:block}
thead th{border-top:2px solid #000;border-bottom:1px solid #000;text-align:left;padding:.2rem .4rem}
tbody td{padding:.2rem .4rem}tbody tr:last-child td{border-bottom:2px solid #000}
.note{font-size:.85rem;margin-top:-.6rem}figure{margin:1rem 0}figcaption{font-style:italic}
pre{background:#f4f4f4;padding:.6rem;overflow-x:auto;font-size:.8rem;white-space:pre-wrap}
@media print{body{max-width:none;margin:0;font-size:10.5pt}h2{break-after:avoid}table,figure{break-inside:avoid}
pre{font-size:7.5pt}a{color:#000;text-decoration:none}}
"""


def _table_html(block):
    head = "".join(f'<th scope="col">{escape(c)}</th>' for c in block["columns"])
    body = "".join("<tr>" + "".join(f"<td>{escape(c)}</td>" for c in row) + "</tr>" for row in block["rows"])
    note = f'<p class="note">{escape(block["note"])}</p>' if block["note"] else ""
    return (
        f'<table id="{escape(block.get("key") or "")}"><caption><b>{escape(block["label"])}</b>'
        f"{escape(block['title'])}</caption><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>{note}"
    )


def block_html(block):
    kind = block["type"]
    if kind == "heading":
        return f"<h3>{escape(block['text'])}</h3>"
    if kind == "paragraph":
        return f"<p>{escape(block['text'])}</p>"
    if kind == "list":
        return "<ul>" + "".join(f"<li>{escape(i)}</li>" for i in block["items"]) + "</ul>"
    if kind == "code":
        return f"<pre><code>{escape(block['text'])}</code></pre>"
    if kind == "table":
        return _table_html(block)
    if kind == "figure":  # the SVG is built by svg.py from escaped text only
        return (
            f"<figure>{block['svg']}<figcaption><b>{escape(block['label'])}.</b> {escape(block['title'])}. "
            f"{escape(block['desc'])}</figcaption></figure>"
        )
    raise ValueError(f"unknown block {kind}")


def sections_html(doc):
    return "".join(
        f'<section id="section-{s.key}" aria-labelledby="h-{s.key}"><h2 id="h-{s.key}">{escape(s.title)}</h2>'
        + "".join(block_html(b) for b in s.blocks)
        + "</section>"
        for s in doc.sections
    )


def html(doc):
    return (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{escape(doc.title)} · study report</title><style>{CSS}</style></head><body><main>"
        f'<h1>{escape(doc.title)}</h1><p class="subtitle">{escape(doc.subtitle)}</p>'
        f"{sections_html(doc)}</main></body></html>"
    )


def _md_cell(text):
    return str(text).replace("|", "\\|").replace("\n", " ")


def block_md(block):
    kind = block["type"]
    if kind == "heading":
        return f"### {block['text']}"
    if kind == "paragraph":
        return block["text"]
    if kind == "list":
        return "\n".join(f"- {i}" for i in block["items"])
    if kind == "code":
        return f"```{block['language']}\n{block['text'].rstrip()}\n```"
    if kind == "table":
        lines = [f"**{block['label']}.** *{block['title']}*", ""]
        lines.append("| " + " | ".join(_md_cell(c) for c in block["columns"]) + " |")
        lines.append("|" + "|".join("---" for _ in block["columns"]) + "|")
        lines += ["| " + " | ".join(_md_cell(c) for c in row) + " |" for row in block["rows"]]
        if block["note"]:
            lines += ["", f"*{block['note']}*"]
        return "\n".join(lines)
    if kind == "figure":
        return f"**{block['label']}.** *{block['title']}.* {block['desc']} (The figure is in the HTML and PDF report.)"
    raise ValueError(f"unknown block {kind}")


def markdown(doc):
    parts = [f"# {doc.title}", doc.subtitle]
    for s in doc.sections:
        parts.append(f"## {s.title}")
        parts += [block_md(b) for b in s.blocks]
    return "\n\n".join(parts) + "\n"


class PDFUnavailable(RuntimeError):
    pass


def _weasyprint_html():
    try:
        from weasyprint import HTML  # lazy: the optional `report` extra, loaded for a PDF only
    except (ImportError, OSError) as exc:
        raise PDFUnavailable(
            "PDF reports need WeasyPrint and Pango: install the `report` extra (pip install -e '.[report]') and "
            f"Debian's libpango-1.0-0 and libpangoft2-1.0-0 ({exc})."
        ) from None
    return HTML


def pdf_problem():
    """Why a PDF cannot be made here (the `report` extra or Pango is missing), or None."""
    try:
        _weasyprint_html()
    except PDFUnavailable as exc:
        return str(exc)
    return None


def pdf(doc):
    HTML = _weasyprint_html()  # noqa: N806 - WeasyPrint's class

    def no_network(url, *args, **kwargs):
        raise ValueError(f"the report loads nothing from the network ({url})")

    return HTML(string=html(doc), url_fetcher=no_network).write_pdf()


FORMATS = {
    "html": ("text/html; charset=utf-8", "html"),
    "md": ("text/markdown; charset=utf-8", "md"),
    "pdf": ("application/pdf", "pdf"),
}


def render(doc, fmt):
    """(bytes, content type, file extension) of the report in `fmt` (html, md or pdf)."""
    if fmt not in FORMATS:
        raise ValueError(f"format must be one of {', '.join(FORMATS)}")
    content_type, ext = FORMATS[fmt]
    if fmt == "pdf":
        return pdf(doc), content_type, ext
    return (html(doc) if fmt == "html" else markdown(doc)).encode("utf-8"), content_type, ext
