"""A saved coding answers with only what it changes (issue 36): the story's highlights, the codings, the variables
and the messages, each swapped out of band (hx-swap-oob) while the answer itself swaps nothing (HX-Reswap: none).
Each fragment is byte for byte the element the whole workspace shows after the save, so the page reads as if it had
been re-rendered; errors and every other edit still re-render the workspace."""

import pytest
from django.urls import reverse
from lxml import etree
from lxml import html as lxml_html

from annotation import services
from annotation.models import Assignment, Coding, Memo
from stereoscope.models import Membership

pytestmark = pytest.mark.django_db

HX = {"HTTP_HX_REQUEST": "true", "HTTP_HX_TARGET": "ws"}
STORY_IDS = {"ws-messages", "story", "sel-start", "sel-end", "selection", "codings"}


def _html(el):
    return etree.tostring(el, encoding="unicode", with_tail=False)


def fragments(response):
    """{id: outer HTML without its hx-swap-oob} of an answer made of out-of-band fragments alone."""
    assert response.status_code == 200
    assert response["HX-Reswap"] == "none"
    found = {}
    for el in lxml_html.fragments_fromstring(response.content.decode()):
        assert not isinstance(el, str) or not el.strip(), el
        if isinstance(el, str):
            continue
        assert el.get("hx-swap-oob") == "true", _html(el)[:200]
        del el.attrib["hx-swap-oob"]
        assert el.get("id") not in found
        found[el.get("id")] = _html(el)
    return found


def page_elements(client, url, ids):
    page = client.get(url)
    assert page.status_code == 200
    doc = lxml_html.fromstring(page.content.decode())
    return {i: _html(doc.get_element_by_id(i)) for i in ids}


@pytest.fixture
def story(roles, outputs_factory, small_codebook, make_user):
    study = roles["a"]
    cb, codes = small_codebook(study)
    coder, other = roles["users"]["coder"], make_user("other")
    Membership.objects.create(study=study, user=other, role="coder")
    out = outputs_factory(study, ["Ana leads the team with 👩‍🔬 care & <b>calm</b>."])[0]
    for position, user in enumerate((coder, other), start=1):
        Assignment.objects.create(study=study, codebook=cb, output=out, coder=user, position=position)
    theirs = Coding.objects.create(codebook=cb, output=out, code=codes["lead_m"], coder=other, start=0, end=9)
    Memo.objects.create(study=study, author=other, coding=theirs, text="their memo")
    mine = services.create_coding(
        study=study, codebook=cb, output=out, code=codes["lead_f"], coder=coder, start=4, end=9
    )
    Memo.objects.create(study=study, author=coder, coding=mine, text="my <memo>")
    return {
        "study": study,
        "cb": cb,
        "codes": codes,
        "out": out,
        "coder": coder,
        "theirs": theirs,
        "mine": mine,
        "page": reverse("annotation-workspace", args=[study.pk, cb.pk, out.pk]),
        "edit": reverse("annotation-workspace-edit", args=[study.pk, cb.pk, out.pk]),
    }


def test_each_saved_coding_answers_with_the_fragments_the_page_then_shows(story, client_for):
    client = client_for(story["coder"])
    codes = story["codes"]
    edits = [
        ({"op": "code", "code": codes["care_f"].pk, "start": 0, "end": 3}, STORY_IDS | {"doc-codings"}),
        ({"op": "code", "code": codes["care_m"].pk, "whole": "1"}, STORY_IDS | {"doc-codings"}),
        ({"op": "reassign", "coding": story["mine"].pk, "code": codes["care_m"].pk}, STORY_IDS | {"doc-codings"}),
        ({"op": "delete", "coding": story["mine"].pk}, STORY_IDS | {"doc-codings"}),
    ]
    for data, ids in edits:
        answer = client.post(story["edit"], data, **HX)
        got = fragments(answer)
        assert set(got) == ids, data
        assert got == page_elements(client, story["page"], ids), data
        body = answer.content.decode()
        # nothing else of the workspace is rendered or sent: not the code panel, the forms or the queue
        for absent in ('id="ws"', "code-tree", 'id="gender-form"', 'id="new-code-form"', 'id="story-memo-form"'):
            assert absent not in body, (data, absent)
        # blind: the other coder's coding and memo are in no fragment
        assert f'data-coding="{story["theirs"].pk}"' not in body and "their memo" not in body
    assert Coding.objects.filter(coder=story["coder"]).count() == 2  # care_f span and the whole-story care_m


def test_the_saved_fragments_show_everyone_for_a_researcher_asking_for_all(story, client_for, roles):
    client = client_for(roles["users"]["researcher"])
    got = fragments(
        client.post(
            story["edit"] + "?all=1", {"op": "code", "code": story["codes"]["care_f"].pk, "start": 0, "end": 3}, **HX
        )
    )
    assert f'data-coding="{story["theirs"].pk}"' in got["codings"] and "their memo" in got["codings"]
    assert got == page_elements(client, story["page"] + "?all=1", STORY_IDS | {"doc-codings"})


def test_an_error_or_another_edit_re_renders_the_workspace(story, client_for):
    client = client_for(story["coder"])
    failed = client.post(
        story["edit"], {"op": "code", "code": story["codes"]["care_f"].pk, "start": "", "end": ""}, **HX
    )
    assert "HX-Reswap" not in failed and 'id="ws"' in failed.content.decode() and "ws-error" in failed.content.decode()
    memo = client.post(story["edit"], {"op": "memo", "target": "output", "text": "a note"}, **HX)
    assert "HX-Reswap" not in memo and 'id="ws"' in memo.content.decode() and "a note" in memo.content.decode()
    # the next saved coding clears the error the page shows
    got = fragments(
        client.post(story["edit"], {"op": "code", "code": story["codes"]["care_f"].pk, "start": 0, "end": 3}, **HX)
    )
    assert "ws-error" not in got["ws-messages"]


VARIABLES = {
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


def test_a_chosen_value_answers_with_the_variables_as_the_page_then_shows_them(roles, outputs_factory, client_for):
    study, coder = roles["a"], roles["users"]["coder"]
    cb = services.import_codebook(study, VARIABLES)
    out = outputs_factory(study, ["She was kind to him."])[0]
    Assignment.objects.create(study=study, codebook=cb, output=out, coder=coder)
    codes = {c.name: c for c in cb.codes.all()}
    client = client_for(coder)
    edit = reverse("annotation-workspace-edit", args=[study.pk, cb.pk, out.pk])
    for name in ("neutral", "positive"):
        got = fragments(
            client.post(edit, {"op": "value", "variable": codes["Regard"].pk, "code": codes[name].pk}, **HX)
        )
        assert set(got) == STORY_IDS | {"variables"}
        assert f'value="{codes[name].pk}" data-variable="variable-{codes["Regard"].pk}"' in got["variables"]
        page = reverse("annotation-workspace", args=[study.pk, cb.pk, out.pk])
        assert got == page_elements(client, page, set(got))
    assert Coding.objects.get(coder=coder).code == codes["positive"]
