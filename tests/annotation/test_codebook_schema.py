"""The codebook format is one JSON Schema (annotation/schema/codebook.schema.json) checked through the shared
reporter: every problem names the code it is in (as the reader counts them) and says what is wrong; the rules across
codes (unique guids and shortcuts, variables) are reported in the same list, and a refused file saves nothing."""

import io
import json

import pytest

from annotation import codebook_format as fmt
from annotation.models import Code, Codebook, GenderTag, VariableScope
from stereoscope import schemas

pytestmark = pytest.mark.django_db


def errors_of(data):
    with pytest.raises(fmt.CodebookFormatError) as info:
        fmt.validate_tree(data)
    return info.value.errors


def test_each_problem_names_its_code_and_says_what_is_wrong():
    bad = {
        "name": "Bad",
        "codes": [
            {
                "name": "Family",
                "codable": "maybe",
                "children": [
                    {"name": "Mother", "color": "red", "gender_tag": "X", "colour": "#fff"},
                    {"name": "Father", "guid": "not-a-guid", "item_number": -2, "shortcut": "ab"},
                    {"name": "  "},
                ],
            },
            {"name": "Work", "kind": "deductive", "gold_rule": "mean", "variable": "sentence"},
            "just text",
        ],
    }
    assert sorted(errors_of(bad)) == sorted(
        [
            "Code 1 ('Family'): 'maybe' is not true/false.",
            "Code 1 ('Family') › code 1 ('Mother'): colour 'red' is not #rrggbb.",
            "Code 1 ('Family') › code 1 ('Mother'): gender tag 'X' must be F, M or empty.",
            "Code 1 ('Family') › code 1 ('Mother'): unknown field(s) 'colour'; allowed: name, description, color, "
            "gender_tag, kind, codable, shortcut, stereotype, guid, item_number, frequency_reference, variable, "
            "ordered, exclude, gold_rule, gold_min_raters, parent, path, children",
            "Code 1 ('Family') › code 2 ('Father'): guid 'not-a-guid' is not a GUID.",
            "Code 1 ('Family') › code 2 ('Father'): item number -2 must be a whole number (0 or more).",
            "Code 1 ('Family') › code 2 ('Father'): the shortcut 'ab' must be a single visible character.",
            "Code 1 ('Family') › code 3: a code has no name.",
            "Code 2 ('Work'): kind 'deductive' must be a_priori or inductive.",
            "Code 2 ('Work'): gold_rule 'mean' must be majority or plurality.",
            "Code 2 ('Work'): variable 'sentence' must be story, span or empty.",
            "Code 3: a code must be an object.",
        ]
    )


def test_the_codebook_itself_and_rules_across_codes_are_reported_together():
    assert errors_of({"codes": []}) == ["The codebook has no codes.", "The codebook has no name."]
    assert errors_of({"name": "x" * 201, "codes": [{"name": "A"}]}) == [
        "The codebook name is longer than 200 characters."
    ]
    assert errors_of(["not", "an", "object"]) == ["The codebook must be an object with 'name' and 'codes'."]
    both = errors_of(
        {"name": "Both", "codes": [{"name": "A", "shortcut": "1", "color": "#zzz"}, {"name": "B", "shortcut": "1"}]}
    )
    assert both == [
        "Code 1 ('A'): colour '#zzz' is not #rrggbb.",
        "Code 2 ('B'): the shortcut '1' is also used by 'A'.",
    ]


def test_text_cells_of_a_csv_are_read_as_the_schema_allows():
    tree = fmt.validate_tree(
        {
            "name": "Cells",
            "codes": [
                {
                    "name": "V",
                    "codable": "No",
                    "variable": " Story ",
                    "gold_min_raters": "3",
                    "children": [
                        {"name": "a", "codable": "1", "item_number": "", "shortcut": 7},
                        {"name": "b", "exclude": "yes", "color": "#ABC", "kind": "A-priori"},
                    ],
                }
            ],
        }
    )
    top = tree["codes"][0]
    assert (top["codable"], top["variable"], top["gold_rule"], top["gold_min_raters"]) == (
        False,
        "story",
        "majority",
        3,
    )
    a, b = top["children"]
    assert (a["codable"], a["item_number"], a["shortcut"]) == (True, None, "7")
    assert (b["exclude"], b["color"], b["kind"]) == (True, "#aabbcc", "a_priori")


def test_the_schema_choices_are_the_models():
    code = schemas.load(fmt.SCHEMA)["$defs"]["code"]["properties"]
    for tag in GenderTag.values:
        assert not schemas.problems({"name": "X", "codes": [{"name": "A", "gender_tag": tag}]}, fmt.SCHEMA)
    for scope in VariableScope.values:
        assert not schemas.problems({"name": "X", "codes": [{"name": "A", "variable": scope}]}, fmt.SCHEMA)
    assert code["name"]["maxLength"] == Code._meta.get_field("name").max_length
    assert schemas.load(fmt.SCHEMA)["properties"]["name"]["maxLength"] == Codebook._meta.get_field("name").max_length


def test_a_refused_upload_saves_nothing_and_answers_every_problem(roles, api_for):
    study = roles["a"]
    before = (Codebook.objects.count(), Code.objects.count())
    bad = {"name": "Half", "codes": [{"name": "Fine"}, {"name": "Good", "children": [{"name": "C", "color": "no"}]}]}
    upload = io.BytesIO(json.dumps(bad).encode())
    upload.name = "half.json"
    response = api_for(roles["users"]["researcher"]).post(
        f"/api/studies/{study.pk}/codebooks/import/", {"file": upload}, format="multipart"
    )
    assert response.status_code == 400
    assert response.json()["detail"] == "Code 2 ('Good') › code 1 ('C'): colour 'no' is not #rrggbb."
    assert (Codebook.objects.count(), Code.objects.count()) == before
