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


def _hostile_rows(rng, n):
    """Rows shaped like the big exports' (ids, text, timestamps) with hostile cells mixed in: formula starts, quotes
    before them, tabs, carriage returns, the csv module's own specials (comma, quote, newline), None, numbers of
    every kind, booleans, unicode, nested values and objects the writer must serialise."""
    import datetime
    import decimal
    import uuid

    class Text(str):
        pass

    class Float(float):
        def __repr__(self):
            return "Float!"

    starts = ["=", "+", "-", "@", "\t", "\r", "'", "''=", "'x", "a", "", " =", " ", "é", "\x00"]
    tails = ["1+1", "plain", "", "x,y", 'say "hi"', "two\nlines", "cr\rhere", "tab\tin", "ünï ☃ 𝄞", "\u2028", " "]
    pool = [
        lambda: rng.choice(starts) + rng.choice(tails),
        lambda: rng.randint(-5, 5),
        lambda: rng.random() - 0.5,
        lambda: rng.choice([float("nan"), float("inf"), -0.0, 1e20, 1 / 3]),
        lambda: None,
        lambda: rng.random() < 0.5,
        lambda: {"k": rng.choice(starts)},
        lambda: [rng.randint(0, 3)],
        lambda: decimal.Decimal("-1.50"),
        lambda: datetime.date(2026, 11, 28),
        lambda: datetime.datetime(2026, 11, 28, 18, 7, 1, 5, tzinfo=datetime.timezone.utc),
        lambda: uuid.UUID(int=rng.getrandbits(128)),
        lambda: Text(rng.choice(starts) + "sub"),
        lambda: Float(2.5),
    ]
    rows = []
    for i in range(n):
        quiet = i < n // 2  # the first half has no hostile cell in most batches: the column-at-a-time fast paths
        rows.append(
            {
                "id": i,
                "text": "plain words" if quiet and i % 997 else pool[0](),
                "mixed": i if quiet else rng.choice(pool)(),
                "number": rng.choice([1, 2.5]) if quiet else rng.choice([1, 2.5, None, -7]),
                "maybe": rng.choice(["x", None]),
                "=label": "plain" if i % 1000 else rng.choice(pool)(),
            }
        )
    return rows


def test_csv_write_rows_writes_the_same_bytes_as_write_row_by_row():
    """The batched writer checks escaping and quoting a column at a time; the reference is `write`, a cell at a
    time through the csv module. Rows may lack columns (written empty) and carry extra keys (ignored)."""
    import random

    rng = random.Random(5)
    rows = _hostile_rows(rng, 6000)
    rows[10].pop("maybe")
    rows[4000]["extra"] = "=ignored"
    columns = ["id", "text", "mixed", "number", "maybe", "=label"]
    for escape in (True, False):
        for batch in (1, 700, 5000):
            one, many = io.StringIO(), io.StringIO()
            reference = CSVTableWriter(one, columns, escape=escape)
            for row in rows:
                reference.write(row)
            batched = CSVTableWriter(many, columns, escape=escape)
            seen = []
            batched.write_rows(iter(rows), batch=batch, progress=seen.append)
            assert many.getvalue() == one.getvalue()
            assert batched.rows == reference.rows == len(rows) == sum(seen)
            assert max(seen) == min(batch, len(rows))
        text = many.getvalue()
        assert ("\n'=" in text or ",'=" in text) == escape  # something was escaped, only when asked to
        assert '"two\nlines"' in text and '"say ""hi"""' in text


def test_csv_write_rows_of_one_column_quotes_a_lone_empty_cell_as_csv_does():
    one, many = io.StringIO(), io.StringIO()
    rows = [{"a": ""}, {"a": None}, {"a": "=x"}, {"a": 3}]
    reference = CSVTableWriter(one, ["a"])
    for row in rows:
        reference.write(row)
    CSVTableWriter(many, ["a"]).write_rows(rows)
    assert many.getvalue() == one.getvalue() == 'a\n""\n""\n\'=x\n3\n'


def test_jsonl_write_rows_matches_write():
    import random

    rows = _hostile_rows(random.Random(3), 300)
    one, many = io.StringIO(), io.StringIO()
    reference = JSONLTableWriter(one, ["id", "text", "mixed"])
    for row in rows:
        reference.write(row)
    seen = []
    JSONLTableWriter(many, ["id", "text", "mixed"]).write_rows(rows, batch=100, progress=seen.append)
    assert many.getvalue() == one.getvalue() and seen == [100, 100, 100]


def test_csv_write_columns_refuses_ragged_batches():
    import pytest

    writer = CSVTableWriter(io.StringIO(), ["a", "b"])
    with pytest.raises(ValueError):
        writer.write_columns([[1, 2]])
    with pytest.raises(ValueError):
        writer.write_columns([[1, 2], [3]])
    assert writer.write_columns([[], []]) == 0 and writer.rows == 0


def test_csv_lookup_columns_write_the_same_bytes_as_plain_columns():
    """A `Lookup` (a key per row and a table of cells shared by every batch) is formatted a key at a time, once per
    table; its bytes are those of the same cells given as plain columns, hostile ones escaped and quoted alike."""
    import random

    from stereoscope.tables import Lookup, expand_columns

    rng = random.Random(11)
    pool = _hostile_rows(rng, 400)
    table = {k: (row["text"], row["mixed"], row["number"]) for k, row in enumerate(pool)}  # keys seen in any batch
    table[("coder", 7)] = ("=name", None, 3)  # a tuple key, as the coders' are
    keys_pool = list(table)
    columns = ["id", "a", "b", "c", "d", "=label"]
    for escape in (True, False):
        plain, looked_up = io.StringIO(), io.StringIO()
        plain_writer = CSVTableWriter(plain, columns, escape=escape)
        lookup_writer = CSVTableWriter(looked_up, columns, escape=escape)
        for size in (1, 50, 400, 0, 3):
            keys = [rng.choice(keys_pool) for _ in range(size)]
            if size == 1:
                keys = [("coder", 7)]
            ids = list(range(size))
            labels = [rng.choice(["x", "-1", "@y", None]) for _ in range(size)]
            batch = [ids, Lookup(keys, table, 3), [rng.choice(["d", "+d"]) for _ in range(size)], labels]
            assert lookup_writer.write_columns(batch) == size
            assert plain_writer.write_columns(expand_columns(batch)) == size
        assert looked_up.getvalue() == plain.getvalue()
        assert lookup_writer.rows == plain_writer.rows == 454
        assert ("'=name" in plain.getvalue()) == escape
    import pytest

    with pytest.raises(ValueError):
        CSVTableWriter(io.StringIO(), columns).write_columns([[1], Lookup([0], table, 2), ["d"], ["x"]])  # 5 given
    with pytest.raises(ValueError):
        CSVTableWriter(io.StringIO(), columns).write_columns([[1], Lookup([0], {0: (1, 2)}, 3), ["d"], ["x"]])
