"""The output import is checked against its JSON Schema (generation/schema/output_import.schema.json) through the one
reporter; a compiled validator (jsonschema-rs) gates it, and both validators read the schema alike."""

import datetime
import json
import re

import jsonschema
import jsonschema_rs
import pytest

from generation.models import GenerationRun, Output
from generation.runs import collect
from stereoscope import schemas
from stereoscope.untrusted import MAX_STORY_TEXT

from .test_collect import to_csv

SCHEMA = schemas.load(collect.OUTPUT_IMPORT_SCHEMA)
GATED = {"output_import": collect.OUTPUT_IMPORT_SCHEMA, "answers": collect.ANSWERS_SCHEMA}
# Values that read differently in Python's re and in ECMA-262 / Rust regexes, or that int() chokes on.
HOSTILE = [
    "²",
    "٣",
    "３",
    "1.5",
    "-1",
    "0",
    " 3 ",
    "\u3000 5\x85",
    "\x1c7",
    "0012",
    "",
    " ",
    "\x1c",
    "\x85",
    "\ufeff",
    "\u00a0",
    "x",
    " x ",
    2,
    2.0,
    2.5,
    0,
    -3,
    True,
    None,
    [],
    {},
    {"a": 1},
    "a" * 301,
    "e" * 201,
]


def test_the_schema_lengths_are_the_databases():
    row = SCHEMA["$defs"]["row"]["properties"]
    assert row["text"]["maxLength"] == MAX_STORY_TEXT == collect.MAX_TEXT
    assert SCHEMA["maxItems"] == collect.MAX_ROWS


@pytest.mark.parametrize("name", sorted(GATED))
def test_the_gated_schemas_use_no_dialect_escapes(name):
    """\\s, \\d, \\w and \\b mean different things in Python's re and in the compiled validator's regexes."""
    patterns = re.findall(r'"pattern": "([^"]*)"', json.dumps(schemas.load(GATED[name])))
    assert patterns and all(not re.search(r"\\\\[sSdDwWbB]", p) for p in patterns)
    assert str(GATED[name]) in schemas.GATED
    assert re.search(r"\\\\[sSdDwWbB]", json.dumps({"pattern": "^\\s*$"}))  # the probe finds an escape


@pytest.mark.parametrize(
    "name, base, fields",
    [
        ("output_import", {"model": "m", "text": "t"}, ["model", "text", "trial", "item", "prompt", "external_id"]),
        ("output_import", {"model": "m", "text": "t"}, ["slot_values"]),
        ("answers", {"unit": 1}, ["unit", "answer"]),
    ],
)
def test_both_validators_agree_on_hostile_values(name, base, fields):
    schema = schemas.load(GATED[name])
    row_schema = {"$schema": schema["$schema"], "$ref": "#/$defs/row", "$defs": schema["$defs"]}
    compiled, python = jsonschema_rs.validator_for(row_schema), jsonschema.Draft202012Validator(row_schema)
    for field in fields:
        for value in HOSTILE:
            row = {**base, field: value}
            assert compiled.is_valid(row) == python.is_valid(row), (field, value)


def test_gated_problems_are_the_same_as_the_whole_documents():
    rows = [{"model": "m", "text": f"t{i}", "trial": i + 1} for i in range(500)]
    rows[3]["trial"], rows[250]["text"], rows[499]["model"] = "²", " ", ["x"]
    del rows[120]["text"]
    gated = schemas.problems(rows, collect.OUTPUT_IMPORT_SCHEMA)
    whole = schemas.problems(rows, SCHEMA)  # a dict: not gated
    assert gated == whole
    assert [p.path for p in gated] == ["[120]", "[250].text", "[3].trial", "[499].model"]


def test_values_the_compiled_validator_cannot_read_are_reported_by_jsonschema():
    """A spreadsheet's date cell: jsonschema-rs refuses the type; the whole document is checked by jsonschema."""
    records = [(2, {"model": "m", "prompt": "p", "text": datetime.datetime(2026, 1, 1)})]
    with pytest.raises(collect.ImportProblems, match=r"Row 2: the text must be text, got datetime"):
        collect.validate_import(records)


@pytest.mark.parametrize(
    "row, message",
    [
        ({"trial": "²"}, "Row 2: the trial must be a whole number of at least 1, got '²'."),
        ({"item": "٣"}, "Row 2: the item must be an item number, got '٣'."),
        ({"model": "m" * 301}, "Row 2: the model name is longer than 300 characters."),
        ({"external_id": "e" * 201}, "Row 2: the external id is longer than 200 characters."),
        ({"slot_values": "[1, 2]"}, 'Row 2: slot_values must be a JSON object, e.g. {"name": "Kelly"}.'),
    ],
)
def test_hostile_cells_get_a_message_and_save_nothing(study, make_toolkit, row, message):
    """Before the schema, a superscript digit passed str.isdigit() and int() raised (a 500); a long model name or
    external id was cut short without a word."""
    toolkit = make_toolkit(study, 2)
    rows = [{"model": "m", "item": "1", "text": "x", **row}]
    with pytest.raises(collect.ImportProblems) as info:
        collect.import_outputs(study, "bad.csv", to_csv(rows, sorted(rows[0])), toolkit=toolkit)
    assert info.value.problems == [message]
    assert not GenerationRun.objects.exists() and not Output.objects.exists()


def test_every_bad_row_is_named_in_row_order(study, make_toolkit):
    toolkit = make_toolkit(study, 2)
    rows = [{"model": "m", "item": str(i % 2 + 1), "trial": str(i // 2 + 1), "text": f"t{i}"} for i in range(30)]
    rows[25]["text"], rows[3]["trial"], rows[12]["item"] = "", "0", "9"
    with pytest.raises(collect.ImportProblems) as info:
        collect.import_outputs(study, "bad.csv", to_csv(rows, ["model", "item", "trial", "text"]), toolkit=toolkit)
    assert info.value.problems == [
        "Row 5: the trial must be a whole number of at least 1, got '0'.",
        "Row 14: toolkit “%s” has no item 9." % toolkit,
        "Row 27: the text is empty.",
    ]


def test_aliases_blank_cells_and_line_ends(study, make_toolkit):
    toolkit = make_toolkit(study, 1)
    rows = [{"model_name": " claude ", "item_no": " 1 ", "rep": "", "story": "a\r\nb", "id": 7, "seed": "3"}]
    run = collect.import_outputs(study, "x.json", json.dumps(rows).encode(), toolkit=toolkit)
    output = Output.objects.get(run=run)
    assert (output.model_name, output.trial, output.text, output.external_id) == ("claude", 1, "a\nb", "7")
    assert output.item.number == 1 and output.provenance["extra"] == {"seed": "3"}
