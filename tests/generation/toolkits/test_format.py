import json

import pytest

from generation.models import Toolkit
from generation.toolkits.file_format import ToolkitFormatError, export_csv, export_json, import_toolkit, toolkit_to_dict

pytestmark = pytest.mark.django_db


@pytest.fixture
def rich_toolkit(make_toolkit):
    toolkit = make_toolkit(
        name="Grid",
        description="Line one\nline two, with “quotes”, commas",
        items=[
            {
                "number": 1,
                "text": 'Letter for {name}, {age}.\nSecond line; "quoted" {{literal}}',
                "dimension": "Letters",
                "target_stereotype": "agentic",
                "gender_mapping": "F = communal, M = agentic",
                "reversed_order": True,
                "source_reference": "Jung 2025",
                "notes": "n",
                "slots": {"age": ["20", "40"]},
            },
            {"number": 3, "text": "No slots, ünïcödé ✓", "dimension": "Other"},
            {"number": 4, "text": "Twin {name}", "combinations": [{"name": "Joseph"}]},
        ],
        slots={"age": ["60"]},
        combinations=[{"name": "Kelly"}, {"name": "Joseph"}],
    )
    toolkit.dimensions.create(name="Empty", description="no items", order=5)
    twin = toolkit.items.get(number=4)
    twin.counterfactual_of = toolkit.items.get(number=1)
    twin.save()
    return toolkit


def normalised(toolkit):
    data = toolkit_to_dict(toolkit)
    data.pop("version")
    return data


@pytest.mark.parametrize("fmt, export", [("json", export_json), ("csv", export_csv)])
def test_round_trip_is_exact(rich_toolkit, roles, fmt, export):
    content = export(rich_toolkit)
    copy = import_toolkit(roles["b"], content.encode(), fmt=fmt)
    assert export(copy) == content  # both are version 1 of their study
    assert normalised(copy) == normalised(rich_toolkit)
    assert copy.items.get(number=4).counterfactual_of == copy.items.get(number=1)
    again = import_toolkit(roles["b"], content, fmt=fmt)  # same name → next version
    assert again.version == 2 and again.parent == copy


def test_plain_csv_item_list(roles):
    content = 'text,dimension,reversed_order\nFirst prompt,Care,no\n"Second, with comma",Work,yes\n'
    toolkit = import_toolkit(roles["a"], content, fmt="csv", name="From a spreadsheet")
    assert [(i.number, i.text, i.dimension.name, i.reversed_order) for i in toolkit.items.all()] == [
        (1, "First prompt", "Care", False),
        (2, "Second, with comma", "Work", True),
    ]


@pytest.mark.parametrize(
    "fmt, content, message",
    [
        ("json", "{not json", "Not valid JSON"),
        ("json", "[1, 2]", "must be an object"),
        ("json", json.dumps({"name": "x", "items": []}), "non-empty list of items"),
        (
            "json",
            json.dumps({"name": "x", "items": [{"number": 1, "text": "Hi {nmae}"}], "slots": {"name": ["A"]}}),
            r"Item 1 uses the slot \{nmae\}",
        ),
        (
            "json",
            json.dumps({"name": "x", "items": [{"number": 1, "text": "a"}, {"number": 1, "text": "b"}]}),
            "used twice",
        ),
        ("json", json.dumps({"name": "x", "items": [{"number": 1, "text": ""}]}), "needs a text"),
        ("json", json.dumps({"name": "x", "items": [{"number": 1, "text": "a", "colour": "red"}]}), "unknown field"),
        (
            "json",
            json.dumps({"name": "x", "items": [{"number": 1, "text": "a", "counterfactual_of": 9}]}),
            "another item",
        ),
        ("json", json.dumps({"name": "x", "items": [{"number": "one", "text": "a"}]}), "whole number"),
        ("json", json.dumps({"name": "", "items": [{"number": 1, "text": "a"}]}), "needs a name"),
        ("json", json.dumps({"format": "other", "items": []}), "Unknown format"),
        ("csv", "prompt\nHello\n", "Unknown CSV column"),
        ("csv", "kind,text,name\nthing,Hello,x\n", "kind must be toolkit, dimension or item"),
        ("csv", "kind,text,name,slots\ntoolkit,,x,{bad\nitem,Hi,,\n", "not valid JSON"),
        ("csv", "text,reversed_order\nHi,maybe\n", "true or false"),
        ("csv", b"text\n\xff\xfe bad\n", "not UTF-8"),
        ("csv", "text\n", "no rows"),
        ("xml", "<x/>", "Unknown format"),
    ],
)
def test_bad_files_get_clear_errors_and_save_nothing(roles, fmt, content, message):
    before = Toolkit.objects.count()
    with pytest.raises(ToolkitFormatError, match=message):
        import_toolkit(roles["a"], content, fmt=fmt, name="Named" if fmt == "csv" else None)
    assert Toolkit.objects.count() == before


def test_many_errors_are_all_reported(roles):
    items = [
        {"number": 1, "text": ""},
        {"number": 2, "text": "{x}"},
        {"number": 2, "text": "ok", "reversed_order": "perhaps"},
    ]
    with pytest.raises(ToolkitFormatError) as info:
        import_toolkit(roles["a"], json.dumps({"name": "x", "items": items}), fmt="json")
    assert len(info.value.errors) == 4


def test_csv_escapes_formulas_and_reads_them_back(make_toolkit, roles):
    """The CSV export escapes text a spreadsheet would run (=, +, -, @); importing it gives the original text."""
    toolkit = make_toolkit(
        name='=HYPERLINK("x")',
        description="+1 description",
        items=[
            {
                "number": 1,
                "text": "-2 story about {name}",
                "dimension": "@Dimension",
                "target_stereotype": "'=quoted already",
                "notes": "it's fine",
            }
        ],
        slots={"name": ["Kelly"]},
    )
    content = export_csv(toolkit)
    assert "'=HYPERLINK" in content and "'-2 story" in content and "'@Dimension" in content
    assert "''=quoted already" in content
    copy = import_toolkit(roles["b"], content.encode(), fmt="csv")
    assert normalised(copy) == normalised(toolkit)
