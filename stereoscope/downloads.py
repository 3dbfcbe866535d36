"""HTTP downloads of tables: every CSV, JSONL and XLSX that a page or the API serves goes through here,
so every cell passes the one table writer (`stereoscope.tables`) with formula escaping on."""
import io
import os
import tempfile

from django.http import HttpResponse, StreamingHttpResponse

from .tables import TEXT_WRITERS, XLSXWorkbookWriter, start_text, table_text

CONTENT_TYPES = {
    "csv": "text/csv; charset=utf-8",
    "jsonl": "application/x-ndjson; charset=utf-8",
    "xlsx": "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
}


class _Buffer(io.StringIO):
    """A text stream whose contents can be taken and cleared after each row (for streaming)."""

    def take(self):
        value = self.getvalue()
        self.seek(0)
        self.truncate(0)
        return value


def _stream_text(columns, rows, fmt, bom=False, preamble=()):
    buffer = _Buffer()
    start_text(buffer, bom, preamble)
    writer = TEXT_WRITERS[fmt](buffer, columns)
    yield buffer.take()
    for row in rows:
        writer.write(row)
        if buffer.tell() > 65536:
            yield buffer.take()
    yield buffer.take()


def xlsx_bytes(sheets):
    """sheets: [(name, columns, rows)] or [(name, columns, rows, layout)] -> the bytes of one workbook with a
    sheet per table (layout: see XLSXWorkbookWriter.table)."""
    handle, path = tempfile.mkstemp(suffix=".xlsx")
    os.close(handle)
    try:
        book = XLSXWorkbookWriter(path)
        for name, columns, rows, *layout in sheets:
            table = book.table(name, columns, layout=layout[0] if layout else None)
            for row in rows:
                table.write(row)
        book.close()
        with open(path, "rb") as stream:
            return stream.read()
    finally:
        os.unlink(path)


def _attachment(response, filename):
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response


def table_download(columns, rows, filename, fmt="csv", sheet="data", bom=False, preamble=(), layout=None,
                   stream=False):
    """A download response of one table. `rows` yields dicts keyed by column. `stream` sends CSV and JSONL as it
    is written (for tables too large to hold). `bom`, `preamble` (CSV) and `layout` (XLSX) as in table_text and
    xlsx_bytes."""
    columns = list(columns)
    if fmt == "xlsx":
        response = HttpResponse(xlsx_bytes([(sheet, columns, rows, layout)]), content_type=CONTENT_TYPES["xlsx"])
    elif fmt in TEXT_WRITERS and stream:
        response = StreamingHttpResponse(_stream_text(columns, rows, fmt, bom, preamble),
                                         content_type=CONTENT_TYPES[fmt])
    elif fmt in TEXT_WRITERS:
        response = HttpResponse(table_text(columns, rows, fmt, bom, preamble), content_type=CONTENT_TYPES[fmt])
    else:
        raise ValueError(f"Unknown table format {fmt!r}: use csv, jsonl or xlsx.")
    return _attachment(response, filename)


def workbook_download(sheets, filename):
    """A download response of several tables as one XLSX workbook."""
    return _attachment(HttpResponse(xlsx_bytes(sheets), content_type=CONTENT_TYPES["xlsx"]), filename)
