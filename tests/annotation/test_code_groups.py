"""Categorical code groups: one value per story (or span), an exclude value, JSON round trip, workspace choice."""

import json

import pytest
from django.urls import reverse

from annotation import codebook_format as fmt
from annotation import services
from annotation.models import Assignment, Coding
from tests.annotation.conftest import outputs_factory  # noqa: F401 (fixtures)

REGARD = {
    "name": "Regard",
    "codes": [
        {
            "name": "Regard",
            "codable": False,
            "variable": "story",
            "ordered": True,
            "children": [
                {"name": "negative"},
                {"name": "neutral"},
                {"name": "positive"},
                {"name": "uncertain", "exclude": True},
            ],
        }
    ],
}


@pytest.fixture
def regard(roles, outputs_factory):
    study = roles["a"]
    cb = services.import_codebook(study, REGARD)
    outs = outputs_factory(study, ["She was kind.", "He was rude."])
    coder = roles["users"]["coder"]
    for out in outs:
        Assignment.objects.create(study=study, codebook=cb, output=out, coder=coder)
    values = {c.name: c for c in cb.codes.filter(codable=True)}
    return {"study": study, "cb": cb, "outs": outs, "coder": coder, "values": values, "roles": roles}


def test_json_round_trip_keeps_the_variable_and_its_exclude_value(regard):
    tree = services.codebook_tree(regard["cb"])
    group = tree["codes"][0]
    assert (group["variable"], group["ordered"]) == ("story", True)
    assert [c["exclude"] for c in group["children"]] == [False, False, False, True]
    again = services.import_codebook(regard["roles"]["b"], json.loads(json.dumps(tree)))
    copy = again.codes.get(name="Regard")
    assert copy.is_variable and copy.variable_ordered
    assert list(again.codes.filter(exclude_value=True).values_list("name", flat=True)) == ["uncertain"]
    qdc_tree = fmt.parse_qdc(fmt.tree_to_qdc(tree), name="Regard")
    assert qdc_tree["codes"][0]["variable"] == "story" and qdc_tree["codes"][0]["children"][3]["exclude"] is True


@pytest.mark.parametrize(
    "bad, message",
    [
        (
            {
                "name": "R",
                "codes": [{"name": "V", "codable": False, "variable": "story", "children": [{"name": "only"}]}],
            },
            "at least two values",
        ),
        (
            {
                "name": "R",
                "codes": [
                    {"name": "V", "codable": False, "variable": "sentence", "children": [{"name": "a"}, {"name": "b"}]}
                ],
            },
            "must be story, span",
        ),
        (
            {
                "name": "R",
                "codes": [
                    {
                        "name": "V",
                        "codable": False,
                        "variable": "story",
                        "children": [{"name": "a", "exclude": True}, {"name": "b", "exclude": True}],
                    }
                ],
            },
            "at most one exclude",
        ),
        (
            {
                "name": "R",
                "codes": [{"name": "G", "codable": False, "children": [{"name": "a", "exclude": True}, {"name": "b"}]}],
            },
            "is not a variable",
        ),
    ],
)
def test_bad_variables_are_refused_with_a_message(bad, message, roles):
    with pytest.raises(fmt.CodebookFormatError, match=message):
        fmt.validate_tree(bad)


def test_a_second_value_replaces_the_first_per_story(regard):
    s, v = regard, regard["values"]
    kw = {"study": s["study"], "codebook": s["cb"], "output": s["outs"][0], "coder": s["coder"]}
    services.create_coding(code=v["positive"], **kw)
    services.create_coding(code=v["negative"], **kw)
    mine = Coding.objects.filter(output=s["outs"][0], coder=s["coder"])
    assert [c.code.name for c in mine] == ["negative"]
    with pytest.raises(services.AnnotationError, match="one value per story"):
        services.create_coding(code=v["neutral"], start=0, end=3, **kw)


def test_workspace_offers_the_variable_as_a_choice(regard, client_for):
    s = regard
    client = client_for(s["coder"])
    url = reverse("annotation-workspace", args=[s["study"].pk, s["cb"].pk, s["outs"][1].pk])
    page = client.get(url)
    assert page.status_code == 200
    html = page.content.decode()
    assert 'id="variables"' in html and html.count('type="radio"') == 4
    edit = reverse("annotation-workspace-edit", args=[s["study"].pk, s["cb"].pk, s["outs"][1].pk])
    for name in ("positive", "uncertain"):
        r = client.post(
            edit,
            {"op": "value", "variable": s["cb"].codes.get(name="Regard").pk, "code": s["values"][name].pk},
            HTTP_HX_REQUEST="true",
            HTTP_HX_TARGET="ws",
        )
        assert r.status_code == 200
    assert [c.code.name for c in Coding.objects.filter(output=s["outs"][1])] == ["uncertain"]
    assert "checked" in r.content.decode()
