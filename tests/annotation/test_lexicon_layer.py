"""The text-measures lexicon layer is a toggleable panel in the coding workspace and in the output viewer."""

import pytest

from annotation.models import Assignment
from measures.builtin import builtin_specs as lexicon_specs
from measures.models import Lexicon
from stereoscope.builtin import load_builtins

STORY = "Kelly is an ambitious leader <img src=x onerror=alert(1)> and a warm, caring friend."


@pytest.fixture
def layer_setup(roles, outputs_factory, small_codebook):
    load_builtins(lexicon_specs(), log=lambda *_: None)
    study = roles["a"]
    cb, _ = small_codebook(study)
    (out,) = outputs_factory(study, [STORY])
    Assignment.objects.create(study=study, codebook=cb, output=out, coder=roles["users"]["coder"], position=1)
    jung = Lexicon.objects.get(builtin_key="jung2025-reference-letters")
    return study, cb, out, jung


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_coder_toggles_the_lexicon_layer_in_the_workspace(page, login, layer_setup):
    study, cb, out, jung = layer_setup
    login("coder")
    page.goto(f"/studies/{study.pk}/coding/codebooks/{cb.pk}/stories/{out.pk}/")
    panel = page.locator("#lexicon-layer-panel")
    assert panel.locator("mark").count() == 0
    panel.locator("summary").click()
    panel.locator(".measures-output-layer").wait_for()
    page.wait_for_function("!document.querySelector('.htmx-request, .htmx-swapping, .htmx-settling, .htmx-added')")
    panel.locator("select[name=lexicon]").select_option(str(jung.pk))
    panel.locator("mark").first.wait_for()
    marked = panel.locator("mark").all_inner_texts()
    assert any(t.lower().startswith("ambitio") for t in marked) and any(t.lower().startswith("car") for t in marked)
    assert page.dialogs == []  # the payload in the story stayed text


@pytest.mark.django_db
def test_output_viewer_offers_the_layer_and_the_layer_escapes_text(layer_setup, roles, client_for):
    study, cb, out, jung = layer_setup
    client = client_for(roles["users"]["researcher"])
    html = client.get(f"/studies/{study.pk}/outputs/{out.pk}/").content.decode()
    layer_url = f"/studies/{study.pk}/measures/outputs/{out.pk}/layer/"
    assert layer_url in html
    partial = client.get(layer_url, {"lexicon": jung.pk}).content.decode()
    assert "<mark" in partial and "&lt;img src=x" in partial and "<img src=x" not in partial
    outsider = client_for(roles["users"]["outsider"])
    assert outsider.get(layer_url, {"lexicon": jung.pk}).status_code == 404
