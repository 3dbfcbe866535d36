"""Codebook and codings files: the downloads (codebook as .qdc / CSV / JSON, codings as CSV / JSONL) and the
codebook upload; the API, the pages (annotation/views.py) and `manage.py codebook_import` share them."""

import json

from django.http import HttpResponse
from rest_framework.exceptions import ValidationError

from stereoscope.downloads import table_download
from stereoscope.untrusted import loads_json

from .. import codebook_format as fmt
from .. import selectors, services


def codebook_download(codebook, kind):
    tree = services.codebook_tree(codebook)
    slug = f"codebook-{codebook.pk}-v{codebook.version}"
    if kind == "qdc":
        response = HttpResponse(fmt.tree_to_qdc(tree), content_type="application/xml")
        response["Content-Disposition"] = f'attachment; filename="{slug}.qdc"'
    elif kind == "csv":
        columns, rows = fmt.tree_table(tree)
        response = table_download(columns, rows, f"{slug}.csv")
    elif kind == "json":
        data = {"format": "stereoscope-codebook", **tree}
        response = HttpResponse(json.dumps(data, ensure_ascii=False, indent=1), content_type="application/json")
        response["Content-Disposition"] = f'attachment; filename="{slug}.json"'
    else:
        raise ValidationError({"detail": "file_format must be qdc, csv or json."})
    return response


def codings_download(study, codebook, kind, include_text=False):
    if kind not in ("csv", "jsonl"):
        raise ValidationError({"detail": "file_format must be csv or jsonl."})
    rows = selectors.coding_rows(study, codebook=codebook, include_text=include_text)
    return table_download(
        selectors.coding_columns(include_text), rows, f"codings-{codebook.pk}.{kind}", fmt=kind, stream=True
    )


def import_upload(study, upload, kind, name, user, toolkit=None):
    """Parse an uploaded codebook file (format from `kind` or the file name) and create the codebook."""
    filename = getattr(upload, "name", "") or ""
    kind = (kind or filename.rsplit(".", 1)[-1]).lower()
    if getattr(upload, "size", 0) and upload.size > fmt.MAX_BYTES:
        raise services.AnnotationError("The file is larger than 20 MB.")
    content = upload.read()
    default_name = name or filename.rsplit(".", 1)[0] or "Imported codebook"
    if kind == "qdc":
        tree = fmt.parse_qdc(content, name=default_name)
    elif kind == "csv":
        tree = fmt.parse_csv(content, default_name)
    elif kind == "json":
        try:
            data = loads_json(content.decode("utf-8-sig"))
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise fmt.CodebookFormatError([f"Not valid JSON: {exc}"]) from None
        if isinstance(data, dict) and name:
            data["name"] = name
        tree = fmt.validate_tree(data)
    else:
        raise services.AnnotationError("Upload a .qdc, .csv or .json codebook (or give file_format=qdc|csv|json).")
    return services.import_codebook(study, tree, created_by=user, toolkit=toolkit)
