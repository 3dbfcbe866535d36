"""The one table writer (CSV, JSONL, XLSX). No Django: rows in, bytes out, constant memory.

Spreadsheet formats escape text cells that a spreadsheet would run as a formula (starting with = + - @, tab or
carriage return) by prefixing a single quote (OWASP "CSV injection"). JSONL is lossless and never escaped.
"""
import csv
import datetime
import decimal
import json
import uuid

FORMULA_TRIGGERS = ("=", "+", "-", "@", "\t", "\r")
_TRIGGER_CHARS = "=+-@\t\r"
XLSX_MAX_ROWS = 1_048_576
XLSX_MAX_CELL = 32_767


def escape_formula(value):
    if isinstance(value, str) and value.startswith(FORMULA_TRIGGERS):
        return "'" + value
    return value


def plain_value(value):
    """A scalar for CSV/XLSX: dicts and lists as JSON, None as empty, dates ISO, UUIDs as text."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, (int, float, str)):
        return value
    if isinstance(value, decimal.Decimal):
        return format(value, "f")
    if isinstance(value, (datetime.datetime, datetime.date)):
        return value.isoformat()
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, (dict, list, tuple)):
        return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)
    return str(value)


def json_default(value):
    if isinstance(value, decimal.Decimal):
        return float(value)
    if isinstance(value, (datetime.datetime, datetime.date)):
        return value.isoformat()
    return str(value)


class CSVTableWriter:
    """Writes a header then one line per row dict to a text stream (newline='')."""

    def __init__(self, stream, columns, escape=True):
        self.columns = list(columns)
        self.escape = escape
        self._writer = csv.writer(stream, lineterminator="\n")
        self._writer.writerow([escape_formula(c) for c in self.columns] if escape else self.columns)  # labels too
        self.rows = 0

    def write(self, row):
        # The hot loop of large exports: plain types pass straight to the csv module (None -> empty).
        values = []
        append = values.append
        escape = self.escape
        for value in map(row.get, self.columns):
            cls = value.__class__
            if cls is str:
                if escape and value and value[0] in _TRIGGER_CHARS:
                    value = "'" + value
            elif value is not None and cls is not int and cls is not float:
                value = plain_value(value)
                if escape:
                    value = escape_formula(value)
            append(value)
        self._writer.writerow(values)
        self.rows += 1

    def close(self):
        pass


class JSONLTableWriter:
    """One JSON object per line, keys in column order; nested values stay nested."""

    def __init__(self, stream, columns, escape=False):
        self.columns = list(columns)
        self.stream = stream
        self.rows = 0
        self._encode = json.JSONEncoder(ensure_ascii=False, default=json_default).encode

    def write(self, row):
        self.stream.write(self._encode({name: row.get(name) for name in self.columns}))
        self.stream.write("\n")
        self.rows += 1

    def close(self):
        pass


class XLSXWorkbookWriter:
    """A write-only openpyxl workbook (rows go to a temporary file, not memory). One sheet per table; a
    table longer than Excel's row limit continues on "<name> (2)", "<name> (3)" ..."""

    def __init__(self, path):
        from openpyxl import Workbook

        self.path = path
        self.workbook = Workbook(write_only=True)
        self._names = set()

    def sheet_name(self, name):
        base = "".join("_" if ch in '[]:*?/\\' else ch for ch in name)[:31] or "sheet"
        candidate, n = base, 1
        while candidate.lower() in self._names:
            n += 1
            suffix = f" ({n})"
            candidate = base[: 31 - len(suffix)] + suffix
        self._names.add(candidate.lower())
        return candidate

    def table(self, name, columns, escape=True):
        return _XLSXTable(self, name, list(columns), escape)

    def close(self):
        self.workbook.save(self.path)


class _XLSXTable:
    def __init__(self, book, name, columns, escape):
        self.book, self.name, self.columns, self.escape = book, name, columns, escape
        self.rows = 0
        self._sheet_rows = 0
        self._new_sheet()

    def _new_sheet(self):
        self.sheet = self.book.workbook.create_sheet(self.book.sheet_name(self.name))
        self.sheet.append([self._cell(name) for name in self.columns])  # header cells are escaped like the rest
        self._sheet_rows = 1

    def _cell(self, value):
        from openpyxl.cell import WriteOnlyCell

        value = plain_value(value)
        if isinstance(value, str):
            value = _strip_illegal(value)
            if len(value) > XLSX_MAX_CELL:
                value = value[: XLSX_MAX_CELL - 14] + " [truncated]"
            if self.escape:
                value = escape_formula(value)
            cell = WriteOnlyCell(self.sheet, value=None)
            cell.value = value
            cell.data_type = "s"  # never a formula, whatever the text
            return cell
        return value

    def write(self, row):
        if self._sheet_rows >= XLSX_MAX_ROWS:
            self._new_sheet()
        self.sheet.append([self._cell(row.get(name)) for name in self.columns])
        self._sheet_rows += 1
        self.rows += 1

    def close(self):
        pass


def _strip_illegal(text):
    from openpyxl.cell.cell import ILLEGAL_CHARACTERS_RE

    return ILLEGAL_CHARACTERS_RE.sub("", text)
