"""The lexicon layer in a real browser: highlighted matches, per-category and whole-layer toggles, htmx preview."""

import pytest

from measures import scoring, services

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_layer_toggles_and_preview(page, login, roles, make_outputs):
    study = roles["a"]
    lexicon = services.create_lexicon(
        study,
        services.validate_lexicon_data(
            {
                "name": "Layer",
                "categories": [
                    {"key": "care", "name": "Care", "words": ["kind", "caring"], "color": "#e8590c"},
                    {"key": "lead", "name": "Lead", "words": ["leader", "kind"], "color": "#1c7ed6"},
                ],
            }
        ),
    )
    out = make_outputs(
        study, [{"text": "Kelly is a kind leader and <b>caring</b>.", "slot_values": {"name": "Kelly"}}]
    )[0]
    run = scoring.create_run(study, name="layer", lexicons=[lexicon])
    scoring.start(run)
    login("researcher")
    page.goto(f"/studies/{study.pk}/measures/runs/{run.pk}/outputs/{out.pk}/")
    marks = page.locator("mark.lx")
    assert marks.count() == 3
    assert page.locator(".lx-text").inner_text() == "Kelly is a kind leader and <b>caring</b>."
    care_id = str(lexicon.categories.get(key="care").pk)
    page.locator(f"input[data-lx-toggle='{care_id}']").uncheck()
    caring = page.locator("mark.lx", has_text="caring")
    assert "lx-hidden" in caring.get_attribute("class")
    kind = page.locator("mark.lx", has_text="kind")  # still shown: "kind" is in Lead too
    assert "lx-hidden" not in kind.get_attribute("class")
    page.locator("input[data-lx-all]").uncheck()
    assert "lx-off" in page.locator(".lexicon-layer").get_attribute("class")
    page.goto(f"/studies/{study.pk}/measures/lexicons/{lexicon.pk}/")
    page.fill("textarea[name=text]", "A caring <i>leader</i>.")
    page.click("text=Highlight")
    page.wait_for_selector("#preview mark.lx")
    assert page.locator("#preview mark.lx").count() == 2 and page.locator("#preview i").count() == 0
