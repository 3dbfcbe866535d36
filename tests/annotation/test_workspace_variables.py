"""The workspace shows a story variable's values once, as the variable control, and offers no action that the
variable always refuses (a value as a span code, reassigning a span to a value, a value as a "Whole story" code)."""

import re

import pytest
from django.urls import reverse

from annotation import services
from annotation.models import Assignment, Coding

MIXED = {
    "name": "Mixed",
    "codes": [
        {
            "name": "Regard",
            "codable": False,
            "variable": "story",
            "children": [{"name": "negative"}, {"name": "neutral", "shortcut": "n"}, {"name": "positive"}],
        },
        {"name": "Care", "codable": False, "children": [{"name": "warmth", "shortcut": "1"}]},
    ],
}


@pytest.fixture
def mixed(roles, outputs_factory):
    study = roles["a"]
    cb = services.import_codebook(study, MIXED)
    outs = outputs_factory(study, ["She was kind to him."])
    coder = roles["users"]["coder"]
    Assignment.objects.create(study=study, codebook=cb, output=outs[0], coder=coder)
    codes = {c.name: c for c in cb.codes.all()}
    return {"study": study, "cb": cb, "out": outs[0], "coder": coder, "codes": codes}


def workspace_html(client, s):
    r = client.get(reverse("annotation-workspace", args=[s["study"].pk, s["cb"].pk, s["out"].pk]))
    assert r.status_code == 200
    return r.content.decode()


def test_each_value_is_shown_once_as_the_variable_control(mixed, client_for):
    s = mixed
    client = client_for(s["coder"])
    services.create_coding(
        study=s["study"], codebook=s["cb"], output=s["out"], code=s["codes"]["warmth"], coder=s["coder"], start=0, end=3
    )
    services.create_coding(
        study=s["study"], codebook=s["cb"], output=s["out"], code=s["codes"]["positive"], coder=s["coder"]
    )
    html = workspace_html(client, s)
    for name in ("negative", "neutral", "positive"):
        pk = s["codes"][name].pk
        # one radio, and no code button, reassign option or "Whole story" option for it
        assert len(re.findall(rf'type="radio" name="code" value="{pk}"', html)) == 1, name
        assert f'data-code="{pk}"' not in html, name
        for select in ('id="doc-code-form"', 'class="reassign-select"'):
            assert f'<option value="{pk}">' not in html.split(select)[1].split("</select>")[0], (name, select)
    assert f'data-code="{s["codes"]["warmth"].pk}"' in html  # ordinary codes stay code buttons
    assert f'<option value="{s["codes"]["warmth"].pk}">' in html.split('id="doc-code-form"')[1]
    # the chosen value is the checked radio, not also a line in the "Whole story" list
    doc_list = html.split('id="doc-codings"')[1].split("</ul>")[0]
    assert "positive" not in doc_list
    assert re.search(rf'value="{s["codes"]["positive"].pk}"[^>]*checked', html)
    # the variable is not offered as a parent of a new span code
    new_code_form = html.split('id="new-code-form"')[1].split("</form>")[0]
    assert "Regard" not in new_code_form


def test_values_carry_their_keys(mixed, client_for):
    html = workspace_html(client_for(mixed["coder"]), mixed)
    variables = html.split('id="variables"')[1].split("</section>")[0]
    assert re.findall(r"<kbd>(.)</kbd>", variables) == ["1", "n", "3"]  # the value's own key, else its position
    assert 'data-shortcut="n"' in variables


def test_choosing_a_value_keeps_one_value_and_answers_the_swap(mixed, client_for):
    s = mixed
    client = client_for(s["coder"])
    edit = reverse("annotation-workspace-edit", args=[s["study"].pk, s["cb"].pk, s["out"].pk])
    for name in ("neutral", "negative"):
        r = client.post(
            edit,
            {"op": "value", "variable": s["codes"]["Regard"].pk, "code": s["codes"][name].pk},
            HTTP_HX_REQUEST="true",
            HTTP_HX_TARGET="ws",
        )
        # the answer is the variables (and the story's fragments), swapped out of band: not the whole workspace
        body = r.content.decode()
        assert r.status_code == 200 and r["HX-Reswap"] == "none" and 'id="ws"' not in body
        assert 'id="variables" hx-swap-oob="true"' in body
    assert [c.code.name for c in Coding.objects.filter(output=s["out"])] == ["negative"]
