import csv
import io
import json

import openpyxl

from stereoscope.tables import CSVTableWriter, JSONLTableWriter, XLSXWorkbookWriter, escape_formula, unescape_formula

HOSTILE = ['=HYPERLINK("http://x")', "+1+2", "-3+cmd", "@SUM(A1)", "\tTAB", "plain", "a=b"]


def test_escape_formula_only_touches_text_that_starts_a_formula():
    assert [escape_formula(v) for v in HOSTILE] == [
        '\'=HYPERLINK("http://x")',
        "'+1+2",
        "'-3+cmd",
        "'@SUM(A1)",
        "'\tTAB",
        "plain",
        "a=b",
    ]
    assert escape_formula(-3) == -3


def test_csv_writer_escapes_and_serialises():
    out = io.StringIO()
    writer = CSVTableWriter(out, ["a", "b", "c"])
    writer.write({"a": "=1+1", "b": {"x": 1}, "c": None})
    writer.write({"a": "line\nbreak, comma", "b": [1, 2], "c": True})
    rows = list(csv.reader(io.StringIO(out.getvalue())))
    assert rows == [["a", "b", "c"], ["'=1+1", '{"x": 1}', ""], ["line\nbreak, comma", "[1, 2]", "1"]]
    assert writer.rows == 2


def test_jsonl_is_lossless():
    out = io.StringIO()
    writer = JSONLTableWriter(out, ["a", "b"])
    writer.write({"a": "=1+1", "b": {"x": [1]}, "ignored": 5})
    assert [json.loads(line) for line in out.getvalue().splitlines()] == [{"a": "=1+1", "b": {"x": [1]}}]


def test_xlsx_never_writes_formulas(tmp_path):
    path = tmp_path / "t.xlsx"
    book = XLSXWorkbookWriter(path)
    table = book.table("codings", ["v"])
    for value in HOSTILE:
        table.write({"v": value})
    raw = book.table("raw", ["v"], escape=False)
    raw.write({"v": "=1+1"})
    raw.write({"v": "bad\x00char"})
    book.close()
    wb = openpyxl.load_workbook(path)
    values = [row[0].value for row in wb["codings"].iter_rows(min_row=2)]
    assert values[:5] == ['\'=HYPERLINK("http://x")', "'+1+2", "'-3+cmd", "'@SUM(A1)", "'\tTAB"]
    cells = list(wb["raw"].iter_rows(min_row=2))
    assert cells[0][0].value == "=1+1" and cells[0][0].data_type == "s"  # text, not a formula
    assert cells[1][0].value == "badchar"


def test_xlsx_sheet_names_are_unique_and_legal(tmp_path):
    book = XLSXWorkbookWriter(tmp_path / "t.xlsx")
    names = [book.sheet_name("a/b"), book.sheet_name("a/b"), book.sheet_name("x" * 40)]
    assert names == ["a_b", "a_b (2)", "x" * 31]


def test_unescape_reverses_escape_exactly():
    """Import formats (codebooks, toolkits, weights) read their own escaped CSV back to the original text."""
    values = HOSTILE + ["'=already quoted", "''+twice", "'plain quote", "'", "", "it's"]
    escaped = [escape_formula(v) for v in values]
    assert escaped[len(HOSTILE) :] == ["''=already quoted", "'''+twice", "'plain quote", "'", "", "it's"]
    assert [unescape_formula(v) for v in escaped] == values
    out = io.StringIO()
    writer = CSVTableWriter(out, ["v"])
    for value in values:
        writer.write({"v": value})
    assert [unescape_formula(row[0]) for row in csv.reader(io.StringIO(out.getvalue()))][1:] == values


def test_xlsx_layout_widths_wrap_bold_header(tmp_path):
    path = tmp_path / "t.xlsx"
    book = XLSXWorkbookWriter(path)
    table = book.table("answers", ["unit", "prompt"], layout={"widths": {"unit": 8, "prompt": 60}, "wrap": ["prompt"]})
    table.write({"unit": 1, "prompt": "=long text"})
    book.close()
    sheet = openpyxl.load_workbook(path)["answers"]
    assert sheet["A1"].font.bold and sheet.freeze_panes == "A2"
    assert sheet.column_dimensions["A"].width == 8 and sheet.column_dimensions["B"].width == 60
    assert sheet["B2"].alignment.wrap_text and sheet["B2"].value == "'=long text" and sheet["A2"].value == 1
