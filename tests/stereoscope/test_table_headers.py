"""The one table writer escapes header cells too: a column can be a person's or a model's label."""

import io

from stereoscope.downloads import xlsx_bytes
from stereoscope.tables import CSVTableWriter


def test_csv_header_cells_are_escaped():
    stream = io.StringIO()
    writer = CSVTableWriter(stream, ["plain", "=SUM(A1)", "@bob"])
    writer.write({"plain": "-1", "=SUM(A1)": 2, "@bob": "+x"})
    assert stream.getvalue().splitlines() == ["plain,'=SUM(A1),'@bob", "'-1,2,'+x"]


def test_xlsx_header_cells_are_escaped_text():
    from openpyxl import load_workbook

    data = xlsx_bytes([("t", ["plain", "=SUM(A1)"], [{"plain": "ok", "=SUM(A1)": "=1+1"}])])
    sheet = load_workbook(io.BytesIO(data)).active
    header, row = [[c.value for c in r] for r in sheet.iter_rows()]
    assert header == ["plain", "'=SUM(A1)"] and row == ["ok", "'=1+1"]
    assert all(c.data_type == "s" for c in next(sheet.iter_rows()))
