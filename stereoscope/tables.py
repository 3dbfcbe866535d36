"""The one table writer (CSV, JSONL, XLSX). No Django: rows in, bytes out, constant memory.

Spreadsheet formats escape text cells that a spreadsheet would run as a formula (starting with = + - @, tab or
carriage return) by prefixing a single quote (OWASP "CSV injection"). Text that already starts with quotes before
such a character gets one more, so `unescape_formula` gives back exactly the original (import formats read their
own CSV back through it). JSONL is lossless and never escaped.
"""

import csv
import datetime
import decimal
import io
import json
import re
import uuid
from itertools import islice
from operator import itemgetter

FORMULA_TRIGGERS = ("=", "+", "-", "@", "\t", "\r")
_QUOTE_CHARS = "=+-@\t\r'"  # first characters that may need a quote
BATCH_ROWS = 5000  # rows per batch of CSVTableWriter.write_rows
_NONE = type(None)
_NUMBERS = frozenset((int, float))
_NUMBERS_OR_NONE = _NUMBERS | {_NONE}
_TEXT_OR_NONE = frozenset((str, _NONE))
XLSX_MAX_ROWS = 1_048_576
XLSX_MAX_CELL = 32_767
BOM = "\ufeff"


def _needs_quote(text):
    return text.lstrip("'").startswith(FORMULA_TRIGGERS)


def _csv_quoting_chars():
    """The characters that make this Python's csv module quote a field (QUOTE_MINIMAL, lineterminator "\\n"): the
    delimiter, the quote and the newline. Asked of the module once, so the batched writer follows its rules."""
    found = []
    for char in map(chr, range(128)):
        buffer = io.StringIO()
        csv.writer(buffer, lineterminator="\n").writerow(["a" + char + "b", "c"])
        if buffer.getvalue()[0] == '"':
            found.append(char)
    return "".join(found)


_CSV_QUOTING = _csv_quoting_chars()
# A column's cells joined by a character that is not a quoting one: one search of the joined text says whether any
# cell needs quoting, and a second whether any may start a formula (a separator inside a cell can only cause a
# false alarm, after which every cell of that column is checked on its own).
_JOIN = next(char for char in "\x00\x01\x02\x03" if char not in _CSV_QUOTING)
_FORMULA_START = re.compile(re.escape(_JOIN) + "[" + re.escape(_QUOTE_CHARS) + "]")


def _csv_quoted(text):
    """A cell as csv.writer writes it: quoted (quotes doubled) when it holds a quoting character."""
    for char in _CSV_QUOTING:
        if char in text:
            return '"' + text.replace('"', '""') + '"'
    return text


def escape_formula(value):
    if isinstance(value, str) and value[:1] in _QUOTE_CHARS and _needs_quote(value):
        return "'" + value
    return value


def unescape_formula(value):
    """The original text of a cell written by `escape_formula` (other text unchanged)."""
    if isinstance(value, str) and value[:1] == "'" and _needs_quote(value):
        return value[1:]
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


class Lookup:
    """Neighbouring columns of a column-wise batch given as a key per row and a table {key: (cell, ...)} of `width`
    cells a key, shared by every batch of a table (a story's run, model and item; a code's codebook, name and
    path): a writer formats each key's cells once instead of every row's. `expand` gives the plain columns."""

    __slots__ = ("keys", "table", "width")

    def __init__(self, keys, table, width):
        if width < 1:
            raise ValueError("a lookup stands for at least one column")
        self.keys, self.table, self.width = keys, table, width

    def expand(self):
        if not self.keys:
            return [[] for _ in range(self.width)]
        return [list(column) for column in zip(*map(self.table.__getitem__, self.keys), strict=True)]


def expand_columns(columns):
    """A column-wise batch with its `Lookup`s expanded into plain columns."""
    if not any(isinstance(column, Lookup) for column in columns):
        return columns
    plain = []
    for column in columns:
        if isinstance(column, Lookup):
            plain.extend(column.expand())
        else:
            plain.append(column)
    return plain


class CSVTableWriter:
    """Writes a header then one line per row dict to a text stream (newline='')."""

    def __init__(self, stream, columns, escape=True):
        self.columns = list(columns)
        self.escape = escape
        self._stream = stream
        self._writer = csv.writer(stream, lineterminator="\n")
        self._writer.writerow([escape_formula(c) for c in self.columns] if escape else self.columns)  # labels too
        self.rows = 0
        self._formatted = {}  # id of a Lookup's table -> (the table, {key: its cells as CSV text, joined by ","})

    def write(self, row):
        # The hot loop of large exports: plain types pass straight to the csv module (None -> empty).
        values = []
        append = values.append
        escape = self.escape
        for value in map(row.get, self.columns):
            cls = value.__class__
            if cls is str:
                if escape and value and value[0] in _QUOTE_CHARS and _needs_quote(value):
                    value = "'" + value
            elif value is not None and cls is not int and cls is not float:
                value = plain_value(value)
                if escape:
                    value = escape_formula(value)
            append(value)
        self._writer.writerow(values)
        self.rows += 1

    def write_rows(self, rows, batch=BATCH_ROWS, progress=None):
        """Write many rows: the same bytes as `write` row by row, a batch at a time and a column at a time. A column
        of plain numbers is formatted in one pass; a column of text is checked for formula starts by one C-level
        `str.startswith` pass and for the csv module's quoting characters by a search of the column's joined text,
        and only a column where one is found is escaped or quoted cell by cell. `progress(n)` follows each batch."""
        if len(self.columns) < 2:  # csv quotes a lone empty field: that rule stays with the csv module
            for row in rows:
                self.write(row)
                if progress:
                    progress(1)
            return
        getter, rows = itemgetter(*self.columns), iter(rows)
        while chunk := list(islice(rows, batch)):
            try:
                cells = list(map(getter, chunk))
            except (KeyError, TypeError):  # a row without some column (or not a dict): `write`'s row.get
                cells = [tuple(map(row.get, self.columns)) for row in chunk]
            self.write_columns(list(zip(*cells, strict=True)))
            if progress:
                progress(len(chunk))

    def write_batches(self, batches, progress=None):
        """Write batches of rows given column-wise (see `write_columns`); `progress(n)` follows each batch."""
        for columns in batches:
            written = self.write_columns(columns)
            if progress:
                progress(written)

    def write_columns(self, columns):
        """Write one batch of rows given as its columns (a sequence of cells per column, in column order, all of
        one length; a `Lookup` stands for its `width` columns): the same bytes as `write` row by row. Returns the
        number of rows written."""
        given = sum(column.width if isinstance(column, Lookup) else 1 for column in columns)
        if given != len(self.columns):
            raise ValueError(f"{given} columns given for a table of {len(self.columns)}")
        count = len(columns[0].keys if isinstance(columns[0], Lookup) else columns[0]) if columns else 0
        if not count:
            return 0
        if len(self.columns) < 2:
            for value in expand_columns(columns)[0]:
                self.write({self.columns[0]: value})
            return count
        texts = [
            self._lookup_text(column) if isinstance(column, Lookup) else self._column_text(column) for column in columns
        ]
        self._stream.write("\n".join(map(",".join, zip(*texts, strict=True))))
        self._stream.write("\n")
        self.rows += count
        return count

    def _column_text(self, column):
        """One batch's cells of a column as the csv module writes them."""
        kinds = set(map(type, column))
        if kinds <= _NUMBERS:  # never escaped, never quoted; csv writes repr() of a float and str() of an int
            return list(map(repr, column))
        if kinds <= _NUMBERS_OR_NONE:
            return ["" if value is None else repr(value) for value in column]
        if kinds <= _TEXT_OR_NONE:
            if _NONE in kinds:
                column = ["" if value is None else value for value in column]
            joined = _JOIN + _JOIN.join(column)
            if self.escape and _FORMULA_START.search(joined):
                column = [escape_formula(value) for value in column]  # adds quotes, never a quoting character
        else:
            column = [self._cell_text(value) for value in column]
            joined = _JOIN.join(column)
        if any(char in joined for char in _CSV_QUOTING):
            column = [_csv_quoted(text) for text in column]
        return column

    def _lookup_text(self, lookup):
        """One batch's cells of a Lookup's columns, a row's cells joined by ",": the keys not seen before in this
        table are formatted once, column-wise as `_column_text` formats any column (whose cells come out as they
        would alone)."""
        table_id = id(lookup.table)
        if table_id not in self._formatted:
            self._formatted[table_id] = (lookup.table, {})  # the table is held, so its id is not reused
        formatted = self._formatted[table_id][1]
        new = list(set(lookup.keys) - formatted.keys())
        if new:
            rows = list(map(lookup.table.__getitem__, new))
            if any(len(cells) != lookup.width for cells in rows):
                raise ValueError(f"a lookup {lookup.width} wide has a key with another number of cells")
            columns = [self._column_text(list(column)) for column in zip(*rows, strict=True)]
            formatted.update(zip(new, map(",".join, zip(*columns, strict=True)), strict=True))
        return list(map(formatted.__getitem__, lookup.keys))

    def _cell_text(self, value):
        """A cell of any type as `write` hands it to the csv module, then as that module turns it into text."""
        cls = value.__class__
        if value is None:
            return ""
        if cls is str:
            return escape_formula(value) if self.escape else value
        if cls is not int and cls is not float:
            value = plain_value(value)
            if self.escape:
                value = escape_formula(value)
        return repr(value) if isinstance(value, float) else str(value)

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

    def write_rows(self, rows, batch=BATCH_ROWS, progress=None):
        """Write many rows (as `write` does); `progress(n)` follows every `batch` rows and the last few."""
        done = 0
        for row in rows:
            self.write(row)
            done += 1
            if done == batch:
                if progress:
                    progress(done)
                done = 0
        if done and progress:
            progress(done)

    def close(self):
        pass


TEXT_WRITERS = {"csv": CSVTableWriter, "jsonl": JSONLTableWriter}


def start_text(buffer, bom=False, preamble=()):
    """What comes before a text table's header: a byte order mark, "# ..." preamble lines."""
    if bom:
        buffer.write(BOM)
    for line in preamble:
        buffer.write("# " + " ".join(str(line).splitlines()) + "\n")


def table_text(columns, rows, fmt="csv", bom=False, preamble=()):
    """The whole table as text (CSV or JSONL), for small tables and for API bodies. `bom` starts it with a byte
    order mark, which makes spreadsheet programs read a CSV as UTF-8; `preamble` lines come first as "# ..."
    comments (a file format's own header, e.g. the weights export)."""
    buffer = io.StringIO()
    start_text(buffer, bom, preamble)
    TEXT_WRITERS[fmt](buffer, columns).write_rows(rows)
    return buffer.getvalue()


class XLSXWorkbookWriter:
    """A write-only openpyxl workbook (rows go to a temporary file, not memory). One sheet per table; a
    table longer than Excel's row limit continues on "<name> (2)", "<name> (3)" ..."""

    def __init__(self, path):
        from openpyxl import Workbook

        self.path = path
        self.workbook = Workbook(write_only=True)
        self._names = set()

    def sheet_name(self, name):
        base = "".join("_" if ch in "[]:*?/\\" else ch for ch in name)[:31] or "sheet"
        candidate, n = base, 1
        while candidate.lower() in self._names:
            n += 1
            suffix = f" ({n})"
            candidate = base[: 31 - len(suffix)] + suffix
        self._names.add(candidate.lower())
        return candidate

    def table(self, name, columns, escape=True, layout=None):
        """layout (optional): {"widths": {column: width}, "wrap": [column, ...]}; with a layout the header row is
        bold and stays in view."""
        return _XLSXTable(self, name, list(columns), escape, layout)

    def close(self):
        self.workbook.save(self.path)


class _XLSXTable:
    def __init__(self, book, name, columns, escape, layout=None):
        self.book, self.name, self.columns, self.escape = book, name, columns, escape
        self.layout = layout or {}
        self._wrap = {self.columns.index(c) for c in self.layout.get("wrap", ())}
        self.rows = 0
        self._sheet_rows = 0
        self._new_sheet()

    def _new_sheet(self):
        self.sheet = self.book.workbook.create_sheet(self.book.sheet_name(self.name))
        if self.layout:
            self._lay_out()
        else:
            self.sheet.append([self._cell(name) for name in self.columns])  # header cells are escaped like the rest
        self._sheet_rows = 1

    def _lay_out(self):
        from openpyxl.cell import WriteOnlyCell
        from openpyxl.styles import Font
        from openpyxl.utils import get_column_letter

        for name, width in self.layout.get("widths", {}).items():
            self.sheet.column_dimensions[get_column_letter(self.columns.index(name) + 1)].width = width
        self.sheet.freeze_panes = "A2"
        header = []
        for name in self.columns:
            cell = self._cell(name)  # escaped like every other cell
            if not hasattr(cell, "font"):
                cell = WriteOnlyCell(self.sheet, value=cell)
            cell.font = Font(bold=True)
            header.append(cell)
        self.sheet.append(header)

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
        cells = [self._cell(row.get(name)) for name in self.columns]
        for index in self._wrap:
            cells[index] = self._wrapped(cells[index])
        self.sheet.append(cells)
        self._sheet_rows += 1
        self.rows += 1

    def _wrapped(self, cell):
        from openpyxl.cell import WriteOnlyCell
        from openpyxl.styles import Alignment

        if not hasattr(cell, "alignment"):  # a plain value, not a cell yet
            cell = WriteOnlyCell(self.sheet, value=cell)
        cell.alignment = Alignment(wrap_text=True, vertical="top")
        return cell

    def close(self):
        pass


def _strip_illegal(text):
    from openpyxl.cell.cell import ILLEGAL_CHARACTERS_RE

    return ILLEGAL_CHARACTERS_RE.sub("", text)
